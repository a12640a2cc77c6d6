// The restricted pickle reader (ppb/importers/plain_pickle.hpp): a loop over the opcodes, each
// handled as Python's Unpickler handles it (Lib/pickle.py, the load_* methods) for the opcodes of
// plain data, and refused, naming it, for every other.
#include <ppb/importers/plain_pickle.hpp>

#include <ppb/errors.hpp>
#include <ppb/importers/logs.hpp>

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <unordered_map>

namespace ppb::importers {
namespace {

// Python's opcode names (Lib/pickle.py), for messages; "" for a byte that is no opcode.
std::string_view opcode_name(unsigned char op) noexcept {
    switch (op) {
        case '(':
            return "MARK";
        case '.':
            return "STOP";
        case '0':
            return "POP";
        case '1':
            return "POP_MARK";
        case '2':
            return "DUP";
        case 'F':
            return "FLOAT";
        case 'I':
            return "INT";
        case 'J':
            return "BININT";
        case 'K':
            return "BININT1";
        case 'L':
            return "LONG";
        case 'M':
            return "BININT2";
        case 'N':
            return "NONE";
        case 'P':
            return "PERSID";
        case 'Q':
            return "BINPERSID";
        case 'R':
            return "REDUCE";
        case 'S':
            return "STRING";
        case 'T':
            return "BINSTRING";
        case 'U':
            return "SHORT_BINSTRING";
        case 'V':
            return "UNICODE";
        case 'X':
            return "BINUNICODE";
        case 'a':
            return "APPEND";
        case 'b':
            return "BUILD";
        case 'c':
            return "GLOBAL";
        case 'd':
            return "DICT";
        case '}':
            return "EMPTY_DICT";
        case 'e':
            return "APPENDS";
        case 'g':
            return "GET";
        case 'h':
            return "BINGET";
        case 'i':
            return "INST";
        case 'j':
            return "LONG_BINGET";
        case 'l':
            return "LIST";
        case ']':
            return "EMPTY_LIST";
        case 'o':
            return "OBJ";
        case 'p':
            return "PUT";
        case 'q':
            return "BINPUT";
        case 'r':
            return "LONG_BINPUT";
        case 's':
            return "SETITEM";
        case 't':
            return "TUPLE";
        case ')':
            return "EMPTY_TUPLE";
        case 'u':
            return "SETITEMS";
        case 'G':
            return "BINFLOAT";
        case 0x80:
            return "PROTO";
        case 0x81:
            return "NEWOBJ";
        case 0x82:
            return "EXT1";
        case 0x83:
            return "EXT2";
        case 0x84:
            return "EXT4";
        case 0x85:
            return "TUPLE1";
        case 0x86:
            return "TUPLE2";
        case 0x87:
            return "TUPLE3";
        case 0x88:
            return "NEWTRUE";
        case 0x89:
            return "NEWFALSE";
        case 0x8a:
            return "LONG1";
        case 0x8b:
            return "LONG4";
        case 'B':
            return "BINBYTES";
        case 'C':
            return "SHORT_BINBYTES";
        case 0x8c:
            return "SHORT_BINUNICODE";
        case 0x8d:
            return "BINUNICODE8";
        case 0x8e:
            return "BINBYTES8";
        case 0x8f:
            return "EMPTY_SET";
        case 0x90:
            return "ADDITEMS";
        case 0x91:
            return "FROZENSET";
        case 0x92:
            return "NEWOBJ_EX";
        case 0x93:
            return "STACK_GLOBAL";
        case 0x94:
            return "MEMOIZE";
        case 0x95:
            return "FRAME";
        case 0x96:
            return "BYTEARRAY8";
        case 0x97:
            return "NEXT_BUFFER";
        case 0x98:
            return "READONLY_BUFFER";
        default:
            return "";
    }
}

// What a refused opcode would do, for its message; empty for the opcodes read.
std::string_view refused_because(unsigned char op) noexcept {
    switch (op) {
        case 'c':
        case 0x93:
            return "would import a Python object by name";
        case 'R':
            return "would call a function";
        case 'b':
            return "would set the state of an object";
        case 'i':
        case 'o':
            return "would create an instance of a class";
        case 0x81:
        case 0x92:
            return "would create an object by calling a class's __new__";
        case 0x82:
        case 0x83:
        case 0x84:
            return "would import an object from the copyreg extension registry";
        case 'P':
        case 'Q':
            return "would ask the loader for a persistent object";
        case 0x97:
        case 0x98:
            return "would take an out-of-band buffer";
        case 0x8f:
        case 0x90:
        case 0x91:
            return "builds a set, which a memory snapshot does not hold";
        case 'I':
        case 'L':
        case 'F':
        case 'S':
        case 'V':
        case 'p':
        case 'g':
            return "is an opcode of protocol 0 (text); ppb reads pickles of protocols 2 to 5, "
                   "which Python and PyTorch write";
        default:
            return "";
    }
}

constexpr std::string_view plain_data_only =
    "a memory snapshot is plain data (dicts, lists, tuples, strings, numbers, booleans, None), "
    "and ppb reads nothing else from a pickle: it never imports, calls or builds what one names";

}  // namespace

// The stack machine: Python's Unpickler for plain data. The stack holds values; `marks_` the
// stack's size at each open MARK (Python's metastack), below which no opcode but the ones that
// pop a mark may reach.
class PickleMachine {
  public:
    PickleMachine(std::string bytes, std::string_view source)
        : source_(source), data_(std::make_shared<const std::string>(std::move(bytes))) {
        doc_.bytes_ = data_;
    }

    PlainPickle run() {
        const std::string& d = *data_;
        if (d.empty())
            fail_at(0, "the file is empty: a memory snapshot is a pickle");
        if (static_cast<unsigned char>(d[0]) != 0x80) {
            fail_at(0, fmt::format(
                           "the file does not begin with a pickle's PROTO opcode (0x80) but with "
                           "0x{:02X}: it is not a pickle of protocol 2 to 5 (is it a memory "
                           "snapshot, pickled by torch.cuda.memory._dump_snapshot?)",
                           static_cast<unsigned char>(d[0])));
        }
        for (;;) {
            if (pos_ >= d.size()) {
                fail_at(d.size(),
                        fmt::format("the pickle ends without its STOP opcode (the file has {} "
                                    "bytes): is the file cut short, a run killed while writing "
                                    "it or a partial copy?",
                                    d.size()));
            }
            op_at_ = pos_;
            const auto op = static_cast<unsigned char>(d[pos_++]);
            if (step(op))
                break;
        }
        if (pos_ != d.size()) {
            fail_at(pos_, fmt::format("{} byte{} after the pickle's STOP opcode: a memory "
                                      "snapshot file is one pickle",
                                      d.size() - pos_, d.size() - pos_ == 1 ? "" : "s"));
        }
        return std::move(doc_);
    }

  private:
    using Kind = PlainPickle::Kind;
    using Value = PlainPickle::Value;

    [[noreturn]] void fail_at(std::size_t offset, const std::string& problem) const {
        throw InputError(fmt::format("{}: offset {}: {}", source_, offset, problem));
    }
    [[noreturn]] void fail(const std::string& problem) const {
        fail_at(op_at_, fmt::format("{} {}", op_text(), problem));
    }
    [[nodiscard]] std::string op_text() const {
        const auto op = static_cast<unsigned char>((*data_)[op_at_]);
        return fmt::format("opcode {}", opcode_name(op));
    }

    // `n` bytes of the current opcode's argument; a file that ends first is cut short.
    std::string_view take(std::uint64_t n, std::string_view what) {
        const std::string& d = *data_;
        if (n > d.size() - pos_) {
            fail(
                fmt::format("needs {} byte{} of {}, but the file ends {} byte{} later (it has {} "
                            "bytes): is it cut short, a run killed while writing it or a "
                            "partial copy?",
                            n, n == 1 ? "" : "s", what, d.size() - pos_,
                            d.size() - pos_ == 1 ? "" : "s", d.size()));
        }
        const std::string_view out(d.data() + pos_, static_cast<std::size_t>(n));
        pos_ += static_cast<std::size_t>(n);
        return out;
    }
    // A little-endian unsigned integer of `n` bytes (1, 2, 4 or 8).
    std::uint64_t unsigned_le(std::size_t n, std::string_view what) {
        const std::string_view b = take(n, what);
        std::uint64_t v = 0;
        for (std::size_t i = n; i-- > 0;)
            v = (v << 8) | static_cast<unsigned char>(b[i]);
        return v;
    }

    Value add(PlainPickle::Node node) {
        if (doc_.nodes_.size() >= std::numeric_limits<std::uint32_t>::max())
            fail("makes more values than this reader holds");
        doc_.nodes_.push_back(node);
        return Value{static_cast<std::uint32_t>(doc_.nodes_.size() - 1)};
    }
    Value add_text(Kind kind, std::string_view text) {
        PlainPickle::Node node{kind, false, static_cast<std::uint32_t>(doc_.texts_.size()), 0};
        doc_.texts_.emplace_back(static_cast<std::size_t>(text.data() - data_->data()),
                                 text.size());
        return add(node);
    }
    Value add_container(Kind kind, std::vector<Value> items) {
        PlainPickle::Node node{kind, false, static_cast<std::uint32_t>(doc_.containers_.size()), 0};
        doc_.containers_.push_back(std::move(items));
        return add(node);
    }
    Value add_integer(std::int64_t v) {
        return add({Kind::integer, false, 0, static_cast<std::uint64_t>(v)});
    }

    // The values above the innermost MARK (Python's stack at this level).
    [[nodiscard]] std::size_t floor() const noexcept { return marks_.empty() ? 0 : marks_.back(); }
    void push(Value v) { stack_.push_back(v); }
    Value pop(std::string_view what) {
        if (stack_.size() <= floor())
            fail(fmt::format("needs {} on the stack, and there is none{}", what,
                             marks_.empty() ? "" : " after the last MARK"));
        const Value v = stack_.back();
        stack_.pop_back();
        return v;
    }
    Value& top(std::string_view what) {
        if (stack_.size() <= floor())
            fail(fmt::format("needs {} on the stack, and there is none{}", what,
                             marks_.empty() ? "" : " after the last MARK"));
        return stack_.back();
    }
    // The values pushed since the last MARK, which is closed.
    std::vector<Value> pop_mark() {
        if (marks_.empty())
            fail("needs a MARK before it, and there is none");
        const std::size_t at = marks_.back();
        marks_.pop_back();
        std::vector<Value> items(stack_.begin() + static_cast<std::ptrdiff_t>(at), stack_.end());
        stack_.resize(at);
        return items;
    }
    std::vector<Value>& container_of(Value v, Kind kind, std::string_view what) {
        const PlainPickle::Node& node = doc_.nodes_[v.index];
        if (node.kind != kind) {
            fail(fmt::format("{} {}, not {}", what, PlainPickle::kind_name(kind),
                             PlainPickle::kind_name(node.kind)));
        }
        return doc_.containers_[node.aux];
    }

    void memo_put(std::uint64_t key) {
        const Value v = top("a value to store in the memo");
        doc_memo_[key] = v;
    }
    void memo_get(std::uint64_t key) {
        const auto it = doc_memo_.find(key);
        if (it == doc_memo_.end())
            fail(fmt::format("refers to memo entry {}, which was never stored", key));
        push(it->second);
    }

    // Python's decode_long: `n` bytes, little-endian two's complement.
    void read_long(std::uint64_t n) {
        const std::string_view b = take(n, "the integer");
        std::uint64_t low = 0;
        const std::size_t kept = static_cast<std::size_t>(std::min<std::uint64_t>(n, 8));
        for (std::size_t i = kept; i-- > 0;)
            low = (low << 8) | static_cast<unsigned char>(b[i]);
        const bool negative = n > 0 && (static_cast<unsigned char>(b[n - 1]) & 0x80) != 0;
        if (kept > 0 && kept < 8 && negative)
            low |= ~std::uint64_t{0} << (8 * kept);  // sign extension
        bool large = false;
        if (n > 8) {
            const unsigned char fill = negative ? 0xFF : 0x00;
            for (std::size_t i = 8; i < n && !large; ++i)
                large = static_cast<unsigned char>(b[i]) != fill;
            // The low 64 bits carry the sign only when the high bytes are its extension.
            large = large || (((low >> 63) != 0) != negative);
        }
        push(add({Kind::integer, large, 0, low}));
    }

    // Handles one opcode; true at STOP.
    bool step(unsigned char op) {
        switch (op) {
            case 0x80: {  // PROTO
                const auto version = unsigned_le(1, "the protocol number");
                if (version < 2 || version > 5) {
                    fail(fmt::format("says protocol {}: ppb reads pickles of protocols 2 to 5",
                                     version));
                }
                return false;
            }
            case 0x95: {  // FRAME: the length of the frame that follows
                const std::uint64_t length = unsigned_le(8, "the frame's length");
                if (length > data_->size() - pos_) {
                    fail(fmt::format(
                        "announces a frame of {} bytes, but the file ends {} bytes later (it has "
                        "{} bytes): is it cut short, a run killed while writing it or a partial "
                        "copy?",
                        length, data_->size() - pos_, data_->size()));
                }
                return false;
            }
            case '.': {  // STOP
                const Value v = pop("the pickled value");
                if (!stack_.empty() || !marks_.empty()) {
                    fail(fmt::format("leaves {} value{} and {} MARK{} behind: a malformed pickle",
                                     stack_.size(), stack_.size() == 1 ? "" : "s", marks_.size(),
                                     marks_.size() == 1 ? "" : "s"));
                }
                doc_.root_ = v;
                return true;
            }
            case '(':  // MARK
                marks_.push_back(stack_.size());
                return false;
            case '0':  // POP: the top value, or at a MARK the mark (Python's load_pop)
                if (stack_.size() > floor())
                    stack_.pop_back();
                else
                    (void)pop_mark();
                return false;
            case '1':  // POP_MARK
                (void)pop_mark();
                return false;
            case '2': {  // DUP
                const Value v = top("a value to duplicate");
                push(v);
                return false;
            }
            case 'N':
                push(add({Kind::none, false, 0, 0}));
                return false;
            case 0x88:  // NEWTRUE
            case 0x89:  // NEWFALSE
                push(add({Kind::boolean, false, 0, op == 0x88 ? 1u : 0u}));
                return false;
            case 'J': {  // BININT: 4 bytes, signed
                const auto v = static_cast<std::int32_t>(unsigned_le(4, "the integer"));
                push(add_integer(v));
                return false;
            }
            case 'K':  // BININT1
                push(add_integer(static_cast<std::int64_t>(unsigned_le(1, "the integer"))));
                return false;
            case 'M':  // BININT2
                push(add_integer(static_cast<std::int64_t>(unsigned_le(2, "the integer"))));
                return false;
            case 0x8a:  // LONG1
                read_long(unsigned_le(1, "the integer's length"));
                return false;
            case 0x8b: {  // LONG4: a signed length
                const auto n = static_cast<std::int32_t>(unsigned_le(4, "the integer's length"));
                if (n < 0)
                    fail(fmt::format("gives a negative length, {}", n));
                read_long(static_cast<std::uint64_t>(n));
                return false;
            }
            case 'G': {  // BINFLOAT: 8 bytes, big-endian
                const std::string_view b = take(8, "the float");
                std::uint64_t bits = 0;
                for (const char c : b)
                    bits = (bits << 8) | static_cast<unsigned char>(c);
                push(add({Kind::real, false, 0, bits}));
                return false;
            }
            case 'X':  // BINUNICODE
            case 'B':  // BINBYTES
                push(add_text(op == 'X' ? Kind::text : Kind::bytes,
                              take(unsigned_le(4, "the length"), "the string")));
                return false;
            case 0x8c:  // SHORT_BINUNICODE
            case 'C':   // SHORT_BINBYTES
            case 'U':   // SHORT_BINSTRING (a Python 2 str, read as str as Python 3 does)
                push(add_text(op == 'C' ? Kind::bytes : Kind::text,
                              take(unsigned_le(1, "the length"), "the string")));
                return false;
            case 'T': {  // BINSTRING: a signed length
                const auto n = static_cast<std::int32_t>(unsigned_le(4, "the length"));
                if (n < 0)
                    fail(fmt::format("gives a negative length, {}", n));
                push(add_text(Kind::text, take(static_cast<std::uint64_t>(n), "the string")));
                return false;
            }
            case 0x8d:  // BINUNICODE8
            case 0x8e:  // BINBYTES8
            case 0x96:  // BYTEARRAY8
                push(add_text(op == 0x8d ? Kind::text : Kind::bytes,
                              take(unsigned_le(8, "the length"), "the string")));
                return false;
            case ']':  // EMPTY_LIST
                push(add_container(Kind::list, {}));
                return false;
            case 'l':  // LIST
                push(add_container(Kind::list, pop_mark()));
                return false;
            case ')':  // EMPTY_TUPLE
                push(add_container(Kind::tuple, {}));
                return false;
            case 't':  // TUPLE
                push(add_container(Kind::tuple, pop_mark()));
                return false;
            case 0x85:    // TUPLE1
            case 0x86:    // TUPLE2
            case 0x87: {  // TUPLE3
                std::vector<Value> items(static_cast<std::size_t>(op - 0x84));
                for (std::size_t i = items.size(); i-- > 0;)
                    items[i] = pop("the tuple's items");
                push(add_container(Kind::tuple, std::move(items)));
                return false;
            }
            case '}':  // EMPTY_DICT
                push(add_container(Kind::dict, {}));
                return false;
            case 'd': {  // DICT
                std::vector<Value> items = pop_mark();
                if (items.size() % 2 != 0)
                    fail(fmt::format("gets {} values: a key without its value", items.size()));
                push(add_container(Kind::dict, std::move(items)));
                return false;
            }
            case 'a': {  // APPEND
                const Value v = pop("the value to append");
                const Value list = top("the list to append to");
                container_of(list, Kind::list, "appends to").push_back(v);
                return false;
            }
            case 'e': {  // APPENDS
                std::vector<Value> items = pop_mark();
                const Value list = top("the list to append to");
                auto& into = container_of(list, Kind::list, "appends to");
                into.insert(into.end(), items.begin(), items.end());
                return false;
            }
            case 's': {  // SETITEM
                const Value value = pop("the value to set");
                const Value key = pop("the key to set");
                const Value dict = top("the dict to set an item of");
                auto& into = container_of(dict, Kind::dict, "sets an item of");
                into.push_back(key);
                into.push_back(value);
                return false;
            }
            case 'u': {  // SETITEMS
                std::vector<Value> items = pop_mark();
                if (items.size() % 2 != 0)
                    fail(fmt::format("gets {} values: a key without its value", items.size()));
                const Value dict = top("the dict to set items of");
                auto& into = container_of(dict, Kind::dict, "sets items of");
                into.insert(into.end(), items.begin(), items.end());
                return false;
            }
            case 'q':  // BINPUT
                memo_put(unsigned_le(1, "the memo key"));
                return false;
            case 'r':  // LONG_BINPUT
                memo_put(unsigned_le(4, "the memo key"));
                return false;
            case 0x94:  // MEMOIZE: the next key is the memo's size (Python's load_memoize)
                memo_put(doc_memo_.size());
                return false;
            case 'h':  // BINGET
                memo_get(unsigned_le(1, "the memo key"));
                return false;
            case 'j':  // LONG_BINGET
                memo_get(unsigned_le(4, "the memo key"));
                return false;
            default:
                refuse(op);
        }
    }

    [[noreturn]] void refuse(unsigned char op) {
        const std::string_view name = opcode_name(op);
        if (name.empty()) {
            fail_at(op_at_, fmt::format("0x{:02X} is not a pickle opcode: the file is not a "
                                        "pickle, or it is damaged",
                                        op));
        }
        std::string what(refused_because(op));
        if (op == 'c' || op == 'i') {
            // GLOBAL and INST name the object on two lines; say which, without using it.
            const std::string& d = *data_;
            const std::size_t first = d.find('\n', pos_);
            const std::size_t second =
                first == std::string::npos ? std::string::npos : d.find('\n', first + 1);
            if (second != std::string::npos && second - pos_ <= 256) {
                what = fmt::format("would import {}",
                                   quote_excerpt(fmt::format(
                                       "{}.{}", std::string_view(d).substr(pos_, first - pos_),
                                       std::string_view(d).substr(first + 1, second - first - 1))));
                if (op == 'i')
                    what += " and create an instance of it";
            }
        } else if (op == 0x93 && stack_.size() >= floor() + 2) {
            const Value module = stack_[stack_.size() - 2];
            const Value name_value = stack_.back();
            if (doc_.nodes_[module.index].kind == Kind::text &&
                doc_.nodes_[name_value.index].kind == Kind::text) {
                what = fmt::format("would import {}",
                                   quote_excerpt(fmt::format("{}.{}", doc_.as_text(module),
                                                             doc_.as_text(name_value))));
            }
        }
        if (op == 'I' || op == 'L' || op == 'F' || op == 'S' || op == 'V' || op == 'p' ||
            op == 'g') {
            fail_at(op_at_, fmt::format("pickle opcode {} {}", name, what));
        }
        fail_at(op_at_,
                fmt::format("pickle opcode {} {}: refused ({})", name, what,
                            op == 0x8f || op == 0x90 || op == 0x91
                                ? "ppb reads dicts, lists, tuples, strings, bytes, numbers, "
                                  "booleans and None from a memory snapshot"
                                : plain_data_only));
    }

    std::string source_;
    std::shared_ptr<const std::string> data_;
    std::size_t pos_ = 0;
    std::size_t op_at_ = 0;
    std::vector<Value> stack_;
    std::vector<std::size_t> marks_;
    std::unordered_map<std::uint64_t, Value> doc_memo_;
    PlainPickle doc_;
};

PlainPickle PlainPickle::read(std::string bytes, std::string_view source) {
    return PickleMachine(std::move(bytes), source).run();
}

std::optional<std::int64_t> PlainPickle::as_integer(Value v) const noexcept {
    const Node& node = nodes_[v.index];
    if (node.large)
        return std::nullopt;
    return static_cast<std::int64_t>(node.bits);
}

double PlainPickle::as_real(Value v) const noexcept {
    return std::bit_cast<double>(nodes_[v.index].bits);
}

std::string_view PlainPickle::as_text(Value v) const noexcept {
    const auto& [offset, length] = texts_[nodes_[v.index].aux];
    return std::string_view(*bytes_).substr(offset, length);
}

std::span<const PlainPickle::Value> PlainPickle::items(Value v) const noexcept {
    return containers_[nodes_[v.index].aux];
}

std::optional<PlainPickle::Value> PlainPickle::member(Value dict,
                                                      std::string_view key) const noexcept {
    const std::span<const Value> list = items(dict);
    for (std::size_t i = list.size(); i >= 2; i -= 2) {
        const Value k = list[i - 2];
        if (kind(k) == Kind::text && as_text(k) == key)
            return list[i - 1];
    }
    return std::nullopt;
}

std::string_view PlainPickle::kind_name(Kind kind) noexcept {
    switch (kind) {
        case Kind::none:
            return "None";
        case Kind::boolean:
            return "a bool";
        case Kind::integer:
            return "an int";
        case Kind::real:
            return "a float";
        case Kind::text:
            return "a str";
        case Kind::bytes:
            return "a bytes object";
        case Kind::list:
            return "a list";
        case Kind::tuple:
            return "a tuple";
        case Kind::dict:
            return "a dict";
    }
    return "a value";
}

std::string PlainPickle::describe(Value v) const {
    switch (kind(v)) {
        case Kind::none:
            return "None";
        case Kind::boolean:
            return as_bool(v) ? "True" : "False";
        case Kind::integer: {
            const auto n = as_integer(v);
            return n ? std::to_string(*n) : std::string("an int beyond 64 bits");
        }
        case Kind::real:
            return fmt::format("{}", as_real(v));
        case Kind::text:
            return quote_excerpt(as_text(v), 40) + " (a str)";
        case Kind::bytes:
            return "a bytes object";
        case Kind::list:
        case Kind::tuple:
        case Kind::dict: {
            const std::size_t n = kind(v) == Kind::dict ? items(v).size() / 2 : items(v).size();
            return fmt::format("{} of {} item{}", kind_name(kind(v)), n, n == 1 ? "" : "s");
        }
    }
    return "a value";
}

}  // namespace ppb::importers
