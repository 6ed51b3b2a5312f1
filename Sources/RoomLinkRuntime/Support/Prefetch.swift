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
