// ppb/importers/plain_pickle.hpp — a reader of Python pickles that hold plain data only, and
// nothing else: what torch.cuda.memory._snapshot() pickled is (dicts, lists, tuples, strings,
// numbers, booleans, None), and that is all this reader builds.
//
// A pickle is a program for a stack machine, and Python's own unpickler runs whatever it asks
// for: GLOBAL / STACK_GLOBAL import any object by name, REDUCE calls it, BUILD, INST, OBJ, NEWOBJ
// and NEWOBJ_EX create and fill objects — a memory snapshot from a stranger is code. This reader
// knows the opcodes of plain data of protocols 2 to 5 (Python's Lib/pickle.py and
// Modules/_pickle.c name them; PyTorch and Python write protocol 2 or later):
//   PROTO, FRAME (protocol 4 and 5 framing; a frame that runs past the end of the file is a cut
//   file), STOP;
//   MARK, POP, POP_MARK, DUP;
//   NONE, NEWTRUE, NEWFALSE, BININT, BININT1, BININT2, LONG1, LONG4, BINFLOAT;
//   BINUNICODE, SHORT_BINUNICODE, BINUNICODE8, BINSTRING, SHORT_BINSTRING (str),
//   BINBYTES, SHORT_BINBYTES, BINBYTES8, BYTEARRAY8 (bytes);
//   EMPTY_LIST, LIST, APPEND, APPENDS, EMPTY_TUPLE, TUPLE, TUPLE1, TUPLE2, TUPLE3,
//   EMPTY_DICT, DICT, SETITEM, SETITEMS;
//   BINPUT, LONG_BINPUT, MEMOIZE, BINGET, LONG_BINGET (the memo: one object referred to twice).
// Every other opcode is refused with an InputError naming it and its offset in the file, before
// anything it would do is done: the opcodes that import, call or build objects (GLOBAL,
// STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1, EXT2, EXT4, PERSID,
// BINPERSID, NEXT_BUFFER, READONLY_BUFFER), sets (EMPTY_SET, ADDITEMS, FROZENSET, which no
// snapshot holds) and protocol 0's text opcodes (INT, LONG, FLOAT, STRING, UNICODE, PUT, GET).
// Nothing is ever imported, called or looked up; the bytes are only read.
//
// The reader is iterative (a pickle nests as deep as it likes without recursion here) and its
// memory grows with the file's size, never with what the file claims: a length is checked
// against the bytes that are left before anything is allocated for it. A document may refer to
// itself (a list appended to itself); whoever walks it must bound the depth it walks.
//
// Messages read "<source>: offset <N>: <problem>", N the 0-based offset of the opcode in the file
// (as Python's pickletools.dis numbers them).
#ifndef PPB_IMPORTERS_PLAIN_PICKLE_HPP
#define PPB_IMPORTERS_PLAIN_PICKLE_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppb::importers {

class PlainPickle {
  public:
    enum class Kind : std::uint8_t { none, boolean, integer, real, text, bytes, list, tuple, dict };

    // A value of the document (an index into it); valid as long as the document.
    struct Value {
        std::uint32_t index = 0;
    };

    // Reads the pickle `bytes` (the whole file: one pickle, from its PROTO opcode to its STOP,
    // nothing after). `source` names it in messages. Throws ppb::InputError.
    [[nodiscard]] static PlainPickle read(std::string bytes, std::string_view source);

    [[nodiscard]] Value root() const noexcept { return root_; }
    [[nodiscard]] Kind kind(Value v) const noexcept { return nodes_[v.index].kind; }

    // The value of a boolean.
    [[nodiscard]] bool as_bool(Value v) const noexcept { return nodes_[v.index].bits != 0; }
    // The value of an integer; nullopt when it does not fit in 64 bits (Python ints have no
    // bound).
    [[nodiscard]] std::optional<std::int64_t> as_integer(Value v) const noexcept;
    // The value of a float.
    [[nodiscard]] double as_real(Value v) const noexcept;
    // The bytes of a str (UTF-8, as pickled) or of a bytes object.
    [[nodiscard]] std::string_view as_text(Value v) const noexcept;
    // The elements of a list or tuple; a dict's keys and values, alternating, in the order they
    // were set (the last of two equal keys is the one Python keeps: see member()).
    [[nodiscard]] std::span<const Value> items(Value v) const noexcept;
    // The value of `dict` under the str key `key` (the last one set, as Python keeps it), or
    // nullopt.
    [[nodiscard]] std::optional<Value> member(Value dict, std::string_view key) const noexcept;

    // "an int", "a str", "a dict", ... (Python's type names) for messages.
    [[nodiscard]] static std::string_view kind_name(Kind kind) noexcept;
    // The value for a message: 12, 3.5, 'text' (shortened), True, None, a list of 3, a dict of 2.
    [[nodiscard]] std::string describe(Value v) const;

  private:
    PlainPickle() = default;  // made only by read()

    struct Node {
        Kind kind = Kind::none;
        bool large = false;      // an integer beyond 64 bits
        std::uint32_t aux = 0;   // text: index into texts_; containers: index into containers_
        std::uint64_t bits = 0;  // boolean, integer (two's complement) or the double's bits
    };
    friend class PickleMachine;

    std::shared_ptr<const std::string> bytes_;                // the file; texts point into it
    std::vector<Node> nodes_;                                 //
    std::vector<std::pair<std::size_t, std::size_t>> texts_;  // offset and length in bytes_
    std::vector<std::vector<Value>> containers_;
    Value root_;
};

}  // namespace ppb::importers

#endif  // PPB_IMPORTERS_PLAIN_PICKLE_HPP
