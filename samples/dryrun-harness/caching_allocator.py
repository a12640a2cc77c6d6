"""A replay of PyTorch's CUDA caching allocator: which segments a sequence of tensor allocations and
frees would reserve on a GPU, and the memory snapshot (torch.cuda.memory._snapshot()) it would
leave, so that a dry run made on the CPU can be read as a GPU's would be.

The rules are those of c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch, at commit
00067369c9339bed950762afec327514d6fa2566), with the allocator's default settings (no
max_split_size, no expandable segments, one stream, no garbage collection):

  rounding     a request is rounded up to a multiple of 512 bytes (kMinBlockSize), 512 at least
               (round_size);
  pools        a rounded size of at most 1 MiB (kSmallSize) is served from the small pool, larger
               ones from the large pool (get_pool);
  segments     when no cached block fits, a new segment is reserved (cudaMalloc): 2 MiB
               (kSmallBuffer) for the small pool, 20 MiB (kLargeBuffer) for requests under
               10 MiB (kMinLargeAlloc), the request rounded up to 2 MiB (kRoundLarge) otherwise
               (get_allocation_size);
  best fit     the free block chosen is the smallest of the pool at least as large as the
               request, the lowest address among equal sizes (the pool's set ordered by stream,
               size, address; get_free_block);
  splitting    the block is split when what remains is at least 512 bytes in the small pool, more
               than 1 MiB in the large pool (should_split); the remainder stays free in the pool;
  freeing      a freed block merges with the free blocks beside it in its segment
               (try_merge_blocks) and returns to its pool; segments are kept (reserved) until
               empty_cache() releases those that are wholly free.

The snapshot has the shape _snapshot() returns (torch/csrc/cuda/memory_snapshot.cpp): "segments"
with their blocks (address, size, requested_size, state), "device_traces" with one event per
change ("segment_alloc", "alloc", "free_requested", "free_completed", "segment_free", each with
addr, size, stream and time_us), and "allocator_settings". `ppb import snapshot` reads it.
Allocated memory counts what was requested (the trace's sizes), reserved memory the segments.
"""

import bisect

KIB = 1024
MIB = 1024 * KIB
MIN_BLOCK_SIZE = 512
SMALL_SIZE = 1 * MIB
SMALL_BUFFER = 2 * MIB
LARGE_BUFFER = 20 * MIB
MIN_LARGE_ALLOC = 10 * MIB
ROUND_LARGE = 2 * MIB


def round_size(size):
    """round_size: a multiple of 512 bytes, at least 512."""
    if size < MIN_BLOCK_SIZE:
        return MIN_BLOCK_SIZE
    return (size + MIN_BLOCK_SIZE - 1) // MIN_BLOCK_SIZE * MIN_BLOCK_SIZE


def allocation_size(size):
    """get_allocation_size: the segment reserved for a rounded request no cached block fits."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


class _Block:
    __slots__ = ("address", "size", "requested", "allocated", "small", "segment", "prev", "next")

    def __init__(self, address, size, small, segment):
        self.address = address
        self.size = size
        self.requested = 0
        self.allocated = False
        self.small = small
        self.segment = segment
        self.prev = None
        self.next = None


class CachingAllocator:
    """One device's caching allocator, replayed: malloc, free and empty_cache as PyTorch's, with
    every change recorded as a trace event and the allocated and reserved bytes after it."""

    def __init__(self, device=0, base=0x7F0000000000, start_time_us=1_767_225_600_000_000):
        self.device = device
        self._next_address = base
        self._pools = {True: [], False: []}  # small? -> sorted [(size, address)] of free blocks
        self._blocks = {}  # address -> _Block (allocated and free)
        self._segments = {}  # segment address -> (size, small)
        self.events = []
        self.allocated = 0  # bytes requested and not yet freed
        self.reserved = 0  # bytes of the segments
        self.peak_allocated = 0
        self.peak_reserved = 0
        self._time_us = start_time_us

    # -- the trace -------------------------------------------------------------------------

    def _record(self, action, address, size):
        self._time_us += 1
        self.events.append({"action": action, "addr": address, "size": size, "stream": 0,
                            "time_us": self._time_us})
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        self.peak_reserved = max(self.peak_reserved, self.reserved)

    # -- the pools ---------------------------------------------------------------------------

    def _insert_free(self, block):
        bisect.insort(self._pools[block.small], (block.size, block.address))

    def _remove_free(self, block):
        pool = self._pools[block.small]
        i = bisect.bisect_left(pool, (block.size, block.address))
        assert pool[i] == (block.size, block.address)
        del pool[i]

    def _best_fit(self, size, small):
        pool = self._pools[small]
        i = bisect.bisect_left(pool, (size, -1))
        return self._blocks[pool[i][1]] if i < len(pool) else None

    # -- the allocator's operations ----------------------------------------------------------

    def malloc(self, requested):
        """Allocates `requested` bytes; returns the block's address."""
        size = round_size(requested)
        small = size <= SMALL_SIZE
        block = self._best_fit(size, small)
        if block is None:
            segment_size = allocation_size(size)
            address = self._next_address
            # Segments far apart, as cudaMalloc's are: blocks of two segments never merge.
            self._next_address += max(segment_size, 1 << 30) * 2
            block = _Block(address, segment_size, small, address)
            self._blocks[address] = block
            self._segments[address] = (segment_size, small)
            self.reserved += segment_size
            self._record("segment_alloc", address, segment_size)
        else:
            self._remove_free(block)
        remaining = block.size - size
        if (small and remaining >= MIN_BLOCK_SIZE) or (not small and remaining > SMALL_SIZE):
            rest = _Block(block.address + size, remaining, small, block.segment)
            rest.prev, rest.next = block, block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._blocks[rest.address] = rest
            self._insert_free(rest)
        block.allocated = True
        block.requested = requested
        self.allocated += requested
        self._record("alloc", block.address, requested)
        return block.address

    def free(self, address):
        block = self._blocks.get(address)
        if block is None or not block.allocated:
            raise ValueError(f"free of a block that is not allocated: {address:#x}")
        requested = block.requested
        self.allocated -= requested
        self._record("free_requested", address, requested)
        block.allocated = False
        block.requested = 0
        self._record("free_completed", address, requested)
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated:
                self._remove_free(neighbour)
                first, second = (neighbour, block) if neighbour is block.prev else (block, neighbour)
                first.size += second.size
                first.next = second.next
                if second.next is not None:
                    second.next.prev = first
                del self._blocks[second.address]
                block = first
        self._insert_free(block)

    def empty_cache(self):
        """Releases every segment that holds no allocated block (torch.cuda.empty_cache())."""
        for address, (size, small) in sorted(self._segments.items()):
            block = self._blocks[address]
            if block.allocated or block.size != size:
                continue
            self._remove_free(block)
            del self._blocks[address]
            del self._segments[address]
            self.reserved -= size
            self._record("segment_free", address, size)

    # -- the snapshot ------------------------------------------------------------------------

    def snapshot(self):
        """The dict torch.cuda.memory._snapshot() would return now (one device, one stream)."""
        self._time_us += 1
        segments = []
        for address, (size, small) in sorted(self._segments.items()):
            blocks = []
            block = self._blocks[address]
            allocated = requested = 0
            while block is not None:
                blocks.append({"address": block.address, "size": block.size,
                               "requested_size": block.requested,
                               "state": "active_allocated" if block.allocated else "inactive",
                               "frames": []})
                if block.allocated:
                    allocated += block.size
                    requested += block.requested
                block = block.next
            segments.append({"device": self.device, "address": address, "total_size": size,
                             "allocated_size": allocated, "active_size": allocated,
                             "requested_size": requested, "stream": 0,
                             "segment_type": "small" if small else "large",
                             "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
                             "blocks": blocks})
        traces = [[] for _ in range(self.device + 1)]
        traces[self.device] = list(self.events)
        return {"segments": segments, "device_traces": traces,
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                       "garbage_collection_threshold": 0.0,
                                       "expandable_segments": False,
                                       "roundup_power2_divisions": {}}}
