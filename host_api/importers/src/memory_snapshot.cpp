// A PyTorch memory snapshot read from its plain-data pickle (ppb/importers/memory_snapshot.hpp):
// the members ppb uses, each checked for its type and range where it is read, every problem named
// by its place in the snapshot.
#include <ppb/importers/memory_snapshot.hpp>

#include <ppb/errors.hpp>
#include <ppb/importers/logs.hpp>
#include <ppb/importers/plain_pickle.hpp>
#include <ppb/limits.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <utility>

namespace ppb::importers {
namespace {

using Kind = PlainPickle::Kind;

// A value of the snapshot and where it is ("segments[3].blocks[0]"), for messages.
class Place {
  public:
    Place(const PlainPickle& doc, PlainPickle::Value value, std::string path,
          std::string_view source)
        : doc_(&doc), value_(value), path_(std::move(path)), source_(source) {}

    [[noreturn]] void fail(std::string_view problem) const {
        throw InputError(path_.empty() ? fmt::format("{}: {}", source_, problem)
                                       : fmt::format("{}: {}: {}", source_, path_, problem));
    }
    [[nodiscard]] Kind kind() const noexcept { return doc_->kind(value_); }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

    void expect(Kind kind, std::string_view what) const {
        if (this->kind() != kind)
            fail(fmt::format("expected {}, got {}", what, doc_->describe(value_)));
    }
    [[nodiscard]] std::optional<Place> member(std::string_view key) const {
        expect(Kind::dict, "a dict");
        const auto v = doc_->member(value_, key);
        if (!v)
            return std::nullopt;
        return Place(*doc_, *v, path_.empty() ? std::string(key) : path_ + "." + std::string(key),
                     source_);
    }
    [[nodiscard]] Place required(std::string_view key, std::string_view what) const {
        auto m = member(key);
        if (!m)
            fail(fmt::format("missing '{}' ({})", key, what));
        return *m;
    }
    // The elements of a list (or tuple).
    [[nodiscard]] std::vector<Place> elements(std::string_view what) const {
        if (kind() != Kind::list && kind() != Kind::tuple)
            fail(fmt::format("expected a list of {}, got {}", what, doc_->describe(value_)));
        std::vector<Place> out;
        const auto items = doc_->items(value_);
        out.reserve(items.size());
        for (std::size_t i = 0; i < items.size(); ++i)
            out.emplace_back(*doc_, items[i], fmt::format("{}[{}]", path_, i), source_);
        return out;
    }
    [[nodiscard]] std::string_view text(std::string_view what) const {
        expect(Kind::text, what);
        return doc_->as_text(value_);
    }
    [[nodiscard]] std::int64_t integer(std::string_view what) const {
        // Python's bool is an int, and PyTorch writes every count as an int.
        if (kind() != Kind::integer)
            fail(fmt::format("expected {}, got {}", what, doc_->describe(value_)));
        const auto n = doc_->as_integer(value_);
        if (!n)
            fail(fmt::format("expected {}, got an int beyond 64 bits", what));
        return *n;
    }
    // A count of bytes or an address: an int from 0 to 2^63 - 1.
    [[nodiscard]] std::uint64_t bytes(std::string_view what) const {
        const std::int64_t n = integer(what);
        if (n < 0)
            fail(fmt::format("expected {}, got {} (negative)", what, n));
        return static_cast<std::uint64_t>(n);
    }
    [[nodiscard]] bool boolean(std::string_view what) const {
        expect(Kind::boolean, what);
        return doc_->as_bool(value_);
    }
    [[nodiscard]] double real(std::string_view what) const {
        if (kind() == Kind::integer)
            return static_cast<double>(integer(what));
        expect(Kind::real, what);
        return doc_->as_real(value_);
    }

  private:
    const PlainPickle* doc_;
    PlainPickle::Value value_;
    std::string path_;
    std::string_view source_;
};

constexpr std::uint32_t most_devices = 1u << 16;

std::uint32_t device_of(const Place& place) {
    const std::int64_t device = place.integer("a device index (an int)");
    if (device < 0 || device >= static_cast<std::int64_t>(most_devices))
        place.fail(fmt::format("{} is not a device index (0 to {})", device, most_devices - 1));
    return static_cast<std::uint32_t>(device);
}

std::optional<BlockState> block_state(std::string_view name) {
    if (name == "active_allocated")
        return BlockState::active_allocated;
    if (name == "active_pending_free" || name == "active_awaiting_free")
        return BlockState::active_pending_free;  // the docstring's name for the same state
    if (name == "inactive")
        return BlockState::inactive;
    return std::nullopt;
}

TraceAction action_of(std::string_view name) {
    static const std::pair<std::string_view, TraceAction> actions[] = {
        {"alloc", TraceAction::alloc},
        {"free_requested", TraceAction::free_requested},
        {"free_completed", TraceAction::free_completed},
        {"segment_alloc", TraceAction::segment_alloc},
        {"segment_free", TraceAction::segment_free},
        {"segment_map", TraceAction::segment_map},
        {"segment_unmap", TraceAction::segment_unmap},
        {"oom", TraceAction::oom},
        {"snapshot", TraceAction::snapshot},
    };
    for (const auto& [text, action] : actions) {
        if (text == name)
            return action;
    }
    return TraceAction::other;
}

SnapshotSegment read_segment(const Place& place) {
    SnapshotSegment segment;
    segment.device = device_of(place.required("device", "the segment's device"));
    segment.address = place.required("address", "the segment's address").bytes("an address");
    segment.total_size =
        place.required("total_size", "the segment's size").bytes("an int of bytes");
    if (auto expandable = place.member("is_expandable");
        expandable && expandable->kind() == Kind::boolean)
        segment.expandable = expandable->boolean("True or False");
    std::uint64_t next = segment.address;  // where a block without 'address' lies
    for (const Place& b : place.required("blocks", "the segment's blocks").elements("blocks")) {
        SnapshotBlock block;
        block.size = b.required("size", "the block's size").bytes("an int of bytes");
        block.requested_size = block.size;
        if (auto requested = b.member("requested_size")) {
            block.requested_size = requested->bytes("an int of bytes");
        } else if (auto history = b.member("history")) {
            // PyTorch 2.0: the requested size is the block's first history entry's real_size.
            const auto entries = history->elements("history entries");
            if (!entries.empty()) {
                block.requested_size = entries.front()
                                           .required("real_size", "the size requested")
                                           .bytes("an int of bytes");
            }
        }
        if (block.requested_size > block.size) {
            b.fail(fmt::format("requested_size {} is larger than the block's size {}",
                               block.requested_size, block.size));
        }
        block.address = next;
        if (auto address = b.member("address"))
            block.address = address->bytes("an address");
        const Place state = b.required("state", "the block's state");
        const auto known = block_state(state.text("a state (a str)"));
        if (!known) {
            state.fail(fmt::format(
                "unknown block state {} (PyTorch writes 'active_allocated', 'active_pending_free' "
                "or 'inactive')",
                quote_excerpt(state.text("a state"), 40)));
        }
        block.state = *known;
        if (block.address > std::numeric_limits<std::uint64_t>::max() - block.size)
            b.fail("the block runs past the end of the address space");
        next = block.address + block.size;
        segment.blocks.push_back(block);
    }
    return segment;
}

TraceEvent read_event(const Place& place, std::map<std::string, std::size_t>& other_actions) {
    TraceEvent event;
    const std::string_view name =
        place.required("action", "what the allocator did").text("an action (a str)");
    event.action = action_of(name);
    if (event.action == TraceAction::other) {
        ++other_actions[std::string(name)];
        return event;
    }
    if (auto time = place.member("time_us"))
        event.time_us = time->integer("a time in microseconds (an int)");
    if (event.action == TraceAction::snapshot)
        return event;
    event.size = place.required("size", "the bytes of the event").bytes("an int of bytes");
    if (event.action == TraceAction::oom) {
        if (auto free = place.member("device_free"))
            event.device_free = free->bytes("an int of bytes");
        return event;
    }
    event.addr = place.required("addr", "the address of the event").bytes("an address");
    return event;
}

// What the snapshot says of the allocator's settings. Only reported, never computed with: a
// setting of another type than PyTorch writes today (its keys change between versions) is left
// out, not refused.
std::optional<AllocatorSettings> read_settings(const Place& place) {
    if (place.kind() != Kind::dict)
        return std::nullopt;
    AllocatorSettings settings;
    // PYTORCH_ALLOC_CONF in newer PyTorch, PYTORCH_CUDA_ALLOC_CONF before.
    for (const std::string_view key : {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"}) {
        if (auto conf = place.member(key); conf && conf->kind() == Kind::text) {
            settings.alloc_conf = std::string(conf->text("a str"));
            break;
        }
    }
    if (auto expandable = place.member("expandable_segments");
        expandable && expandable->kind() == Kind::boolean)
        settings.expandable_segments = expandable->boolean("True or False");
    if (auto split = place.member("max_split_size"); split && split->kind() == Kind::integer)
        settings.max_split_size = split->integer("an int of bytes");
    if (auto threshold = place.member("garbage_collection_threshold");
        threshold && threshold->kind() == Kind::real && std::isfinite(threshold->real("a number")))
        settings.garbage_collection_threshold = threshold->real("a number");
    return settings;
}

}  // namespace

MemorySnapshot parse_memory_snapshot(std::string bytes, std::string_view source) {
    const PlainPickle doc = PlainPickle::read(std::move(bytes), source);
    const Place top(doc, doc.root(), "", source);
    if (top.kind() != Kind::dict) {
        top.fail(
            fmt::format("expected the dict torch.cuda.memory._snapshot() returns, with "
                        "'segments' and 'device_traces', got {}",
                        doc.describe(doc.root())));
    }
    MemorySnapshot snapshot;
    const auto segments = top.member("segments");
    if (!segments) {
        top.fail(
            "no 'segments': this pickle is not a memory snapshot (torch.cuda.memory._snapshot() "
            "returns a dict of 'segments' and 'device_traces')");
    }
    for (const Place& s : segments->elements("segments"))
        snapshot.segments.push_back(read_segment(s));
    if (auto traces = top.member("device_traces")) {
        snapshot.has_traces = true;
        const auto devices = traces->elements("traces, one per device");
        if (devices.size() > most_devices)
            traces->fail(fmt::format("{} devices is more than {}", devices.size(), most_devices));
        for (const Place& device : devices) {
            std::vector<TraceEvent> events;
            for (const Place& e : device.elements("trace events"))
                events.push_back(read_event(e, snapshot.other_actions));
            snapshot.device_traces.push_back(std::move(events));
        }
    }
    if (auto settings = top.member("allocator_settings"))
        snapshot.allocator_settings = read_settings(*settings);
    return snapshot;
}

std::string read_snapshot_bytes(const std::filesystem::path& path, std::string_view name) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw InputError(fmt::format("{}: cannot read: {}", name, std::strerror(errno)));
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw InputError(fmt::format("{}: cannot read: {}", name, std::strerror(EISDIR)));
    std::string bytes;
    char buffer[1 << 16];
    while (in) {
        in.read(buffer, sizeof buffer);
        bytes.append(buffer, static_cast<std::size_t>(in.gcount()));
        if (bytes.size() > limits::snapshot_file_bytes) {
            throw InputError(fmt::format(
                "{}: cannot read: more than {} bytes, larger than any memory snapshot ppb reads "
                "(a device such as /dev/zero never ends)",
                name, limits::snapshot_file_bytes));
        }
    }
    if (in.bad())
        throw InputError(fmt::format("{}: cannot read: {}", name, std::strerror(errno)));
    return bytes;
}

}  // namespace ppb::importers
