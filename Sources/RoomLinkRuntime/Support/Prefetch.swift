internal import CRoomLinkPrefetch

/// Asks the CPU to start loading `lines` cache lines (64 bytes each) from `address` on, without waiting for them.
///
/// For work that walks objects too many to stay cached (a million clients') in an order known a little ahead: a
/// loop prefetches the handler of the timer a few places down its batch, a `DelayLine` the receiver of the item a
/// few places down its queue, so that their memory arrives while the ones before them run. Any address is allowed
/// (nothing is read, nothing faults); the call changes only how long later loads take.
public func prefetchCacheLines(at address: UnsafeRawPointer, lines: Int) {
    CRoomLinkPrefetch_lines(address, Int32(clamping: lines))
}

/// Starts loading the cache lines that `bytes` bytes from `address` on span — for a record or an object of known
/// size, where a fixed count of lines would load too many or too few.
public func prefetchCacheLines(at address: UnsafeRawPointer, bytes: Int) {
    let lines = (UInt(bitPattern: address) & 63 &+ UInt(bytes) &+ 63) >> 6
    prefetchCacheLines(at: address, lines: Int(lines))
}
