# The Swift settings of every RoomLink target. Keep in sync with `swiftSettings` in Package.swift.
function(roomlink_swift_settings target)
  target_compile_options(${target} PRIVATE
    "SHELL:-package-name RoomLink"
    "SHELL:-enable-upcoming-feature ExistentialAny"
    "SHELL:-enable-upcoming-feature MemberImportVisibility"
    "SHELL:-enable-upcoming-feature InternalImportsByDefault")
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${CMAKE_Swift_MODULE_DIRECTORY})
endfunction()
