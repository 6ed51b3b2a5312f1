# libevent from the system, and the Swift packages RoomLink uses: an installed CMake package if there is one,
# otherwise the source through FetchContent (EXCLUDE_FROM_ALL, so only the modules RoomLink links are built).

find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBEVENT REQUIRED IMPORTED_TARGET libevent libevent_pthreads)

include(FetchContent)
set(BUILD_TESTING OFF CACHE BOOL "" FORCE)
set(BUILD_EXAMPLES OFF CACHE BOOL "" FORCE)

function(roomlink_fetch name repository tag)
  FetchContent_Declare(${name} GIT_REPOSITORY ${repository} GIT_TAG ${tag} GIT_SHALLOW TRUE)
  FetchContent_GetProperties(${name})
  if(NOT ${name}_POPULATED)
    FetchContent_Populate(${name})
    if(EXISTS ${${name}_SOURCE_DIR}/CMakeLists.txt)
      add_subdirectory(${${name}_SOURCE_DIR} ${${name}_BINARY_DIR} EXCLUDE_FROM_ALL)
    endif()
  endif()
  set(${name}_SOURCE_DIR ${${name}_SOURCE_DIR} PARENT_SCOPE)
endfunction()

find_package(SwiftCollections CONFIG QUIET)
if(NOT SwiftCollections_FOUND)
  roomlink_fetch(swift-collections https://github.com/apple/swift-collections 1.6.0)
endif()

find_package(ArgumentParser CONFIG QUIET)
if(NOT ArgumentParser_FOUND)
  roomlink_fetch(swift-argument-parser https://github.com/apple/swift-argument-parser 1.8.2)
endif()

find_package(Numerics CONFIG QUIET)
if(NOT Numerics_FOUND)
  roomlink_fetch(swift-numerics https://github.com/apple/swift-numerics 1.1.1)
endif()

find_package(SwiftProtobuf CONFIG QUIET)
if(NOT SwiftProtobuf_FOUND)
  roomlink_fetch(swift-protobuf https://github.com/apple/swift-protobuf 1.39.0)
endif()

find_package(Logging CONFIG QUIET)
if(NOT Logging_FOUND)
  roomlink_fetch(swift-log https://github.com/apple/swift-log 1.16.2)
endif()

find_package(SwiftMetrics CONFIG QUIET)
if(NOT SwiftMetrics_FOUND)
  roomlink_fetch(swift-metrics https://github.com/apple/swift-metrics 2.13.0)
endif()

find_package(SwiftAtomics CONFIG QUIET)
if(NOT SwiftAtomics_FOUND)
  roomlink_fetch(swift-atomics https://github.com/apple/swift-atomics 1.3.0)
endif()

# swift-prometheus ships no CMake build: compile its sources here.
roomlink_fetch(swift-prometheus https://github.com/swift-server/swift-prometheus 2.4.1)
file(GLOB ROOMLINK_PROMETHEUS_SOURCES ${swift-prometheus_SOURCE_DIR}/Sources/Prometheus/*.swift)
add_library(Prometheus ${ROOMLINK_PROMETHEUS_SOURCES})
target_link_libraries(Prometheus PUBLIC Atomics CoreMetrics)
set_target_properties(Prometheus PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${CMAKE_Swift_MODULE_DIRECTORY})

# hdrhistogram-swift ships no CMake build: compile its one source file here.
roomlink_fetch(hdrhistogram-swift https://github.com/HdrHistogram/hdrhistogram-swift 0.2.0)
add_library(Histogram ${hdrhistogram-swift_SOURCE_DIR}/Sources/Histogram/Histogram.swift)
target_link_libraries(Histogram PUBLIC Numerics)
set_target_properties(Histogram PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${CMAKE_Swift_MODULE_DIRECTORY})

# LiveKit's access tokens, webhook digests and the WebSocket handshake (RoomLinkLiveKit): OpenSSL's libcrypto.
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET libcrypto)
pkg_check_modules(LIBEVENT_TLS REQUIRED IMPORTED_TARGET libevent_openssl libssl)
