// The restricted pickle reader: the plain data Python's pickle writes at protocols 2 to 5 read back
// exactly (tests/data/snapshots/plain/, written by make_snapshots.py from the values below), and
// everything else refused by opcode and offset, nothing run.
#include "scratch.hpp"

#include <ppb/importers/plain_pickle.hpp>

#include <fmt/format.h>
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <string>

using ppb::importers::PlainPickle;
using Kind = PlainPickle::Kind;

namespace plain_pickle_tests {
namespace {

const std::string plain_dir = std::string(PPB_SNAPSHOTS_DIR) + "/plain/";

PlainPickle read_fixture(const std::string& name) {
    return PlainPickle::read(ppb_test::read_file(plain_dir + name), name);
}

std::string refusal(std::string bytes) {
    return ppb_test::error_message<ppb::InputError>(
        [&] { (void)PlainPickle::read(std::move(bytes), "x.pickle"); });
}

// The integer at `v`, which must be one that fits in 64 bits.
std::int64_t integer(const PlainPickle& doc, PlainPickle::Value v) {
    BOOST_TEST_REQUIRE((doc.kind(v) == Kind::integer));
    const auto n = doc.as_integer(v);
    BOOST_TEST_REQUIRE(n.has_value());
    return *n;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(plain_pickle)

BOOST_AUTO_TEST_CASE(every_protocol_reads_back_what_python_pickled) {
    for (const int protocol : {2, 3, 4, 5}) {
        BOOST_TEST_CONTEXT("protocol " << protocol) {
            const PlainPickle doc = read_fixture(fmt::format("values-p{}.pickle", protocol));
            const auto root = doc.root();
            BOOST_TEST_REQUIRE((doc.kind(root) == Kind::dict));
            BOOST_TEST(integer(doc, *doc.member(root, "a")) == 5);

            const auto numbers = doc.items(*doc.member(root, "numbers"));
            BOOST_TEST_REQUIRE(numbers.size() == 15u);
            const std::int64_t expected[] = {1,
                                             -1,
                                             255,
                                             256,
                                             65535,
                                             65536,
                                             -2147483648LL,
                                             2147483647,
                                             2147483648LL,
                                             std::numeric_limits<std::int64_t>::min(),
                                             std::numeric_limits<std::int64_t>::max()};
            for (std::size_t i = 0; i < std::size(expected); ++i)
                BOOST_TEST(integer(doc, numbers[i]) == expected[i], "numbers[" << i << "]");
            // 2**63 and -2**64 are Python ints beyond 64 bits.
            BOOST_TEST((doc.kind(numbers[11]) == Kind::integer));
            BOOST_TEST(!doc.as_integer(numbers[11]).has_value());
            BOOST_TEST(!doc.as_integer(numbers[12]).has_value());
            BOOST_TEST(doc.as_real(numbers[13]) == 1.5);
            BOOST_TEST(doc.as_real(numbers[14]) == -0.25);

            const auto others = doc.items(*doc.member(root, "others"));
            BOOST_TEST_REQUIRE(others.size() == 10u);
            BOOST_TEST((doc.kind(others[0]) == Kind::boolean));
            BOOST_TEST(doc.as_bool(others[0]));
            BOOST_TEST(!doc.as_bool(others[1]));
            BOOST_TEST((doc.kind(others[2]) == Kind::none));
            BOOST_TEST(doc.as_text(others[3]) == "caf\xc3\xa9");
            BOOST_TEST(doc.as_text(others[4]).empty());
            for (std::size_t t = 5; t < 10; ++t)
                BOOST_TEST((doc.kind(others[t]) == Kind::tuple));
            BOOST_TEST(doc.items(others[5]).size() == 2u);
            BOOST_TEST(integer(doc, doc.items(others[5])[1]) == 2);
            BOOST_TEST(doc.items(others[6]).empty());
            BOOST_TEST(doc.items(others[7]).size() == 1u);
            BOOST_TEST(doc.items(others[8]).size() == 3u);
            BOOST_TEST(integer(doc, doc.items(others[9])[3]) == 4);

            // One list, referred to twice through the memo.
            BOOST_TEST(doc.member(root, "s1")->index == doc.member(root, "s2")->index);
            BOOST_TEST(integer(doc, doc.items(*doc.member(root, "s1"))[0]) == 7);
            if (protocol >= 3) {
                BOOST_TEST((doc.kind(*doc.member(root, "bytes")) == Kind::bytes));
                BOOST_TEST(doc.as_text(*doc.member(root, "bytes")) == "xy");
            }
            if (protocol >= 5)
                BOOST_TEST(doc.as_text(*doc.member(root, "bytearray")) == "z");
            BOOST_TEST(!doc.member(root, "absent").has_value());
        }
    }
}

BOOST_AUTO_TEST_CASE(a_value_that_holds_itself_is_read_without_looping) {
    const PlainPickle doc = read_fixture("self-reference.pickle");
    BOOST_TEST_REQUIRE(doc.items(doc.root()).size() == 1u);
    BOOST_TEST(doc.items(doc.root())[0].index == doc.root().index);
}

BOOST_AUTO_TEST_CASE(the_last_of_two_equal_keys_is_the_one_python_keeps) {
    // {"a": 1} then SETITEM "a" 2: EMPTY_DICT, "a", 1, SETITEM, "a", 2, SETITEM
    const PlainPickle doc = PlainPickle::read(
        ppb_test::from_hex("80 02 7d 58 01 00 00 00 61 4b 01 73 58 01 00 00 00 61 4b 02 73 2e"),
        "d");
    BOOST_TEST(integer(doc, *doc.member(doc.root(), "a")) == 2);
    BOOST_TEST(doc.describe(doc.root()) == "a dict of 2 items");
}

BOOST_AUTO_TEST_CASE(long4_and_the_eight_byte_lengths) {
    // LONG4 of 2 bytes (-2), BINUNICODE8 "ab", BINBYTES8 "c", in a TUPLE3.
    const std::string bytes = ppb_test::from_hex(
        "80 04 8b 02 00 00 00 fe ff 8d 02 00 00 00 00 00 00 00 61 62 8e 01 00 00 00 00 00 00 00 "
        "63 87 2e");
    const PlainPickle doc = PlainPickle::read(bytes, "t");
    const auto items = doc.items(doc.root());
    BOOST_TEST_REQUIRE(items.size() == 3u);
    BOOST_TEST(integer(doc, items[0]) == -2);
    BOOST_TEST(doc.as_text(items[1]) == "ab");
    BOOST_TEST((doc.kind(items[2]) == Kind::bytes));
}

BOOST_AUTO_TEST_CASE(code_is_refused_by_opcode_and_offset_and_never_run) {
    // pickletools.dis of the fixtures: GLOBAL 'posix system' at offset 2 (protocol 2),
    // STACK_GLOBAL at offset 28 after 'posix' and 'system' (protocol 4).
    BOOST_TEST(refusal(ppb_test::read_file(plain_dir + "../bad/global-os-system.pickle")) ==
               "x.pickle: offset 2: pickle opcode GLOBAL would import 'posix.system': refused (a "
               "memory snapshot is plain data (dicts, lists, tuples, strings, numbers, booleans, "
               "None), and ppb reads nothing else from a pickle: it never imports, calls or builds "
               "what one names)");
    BOOST_TEST(refusal(ppb_test::read_file(plain_dir + "../bad/stack-global-os-system.pickle")) ==
               "x.pickle: offset 28: pickle opcode STACK_GLOBAL would import 'posix.system': "
               "refused (a memory snapshot is plain data (dicts, lists, tuples, strings, numbers, "
               "booleans, None), and ppb reads nothing else from a pickle: it never imports, calls "
               "or builds what one names)");
    // Each opcode that builds objects, alone after PROTO.
    const std::pair<std::string, std::string> refused[] = {
        {"R", "REDUCE would call a function"},
        {"b", "BUILD would set the state of an object"},
        {"o", "OBJ would create an instance of a class"},
        {"\x81", "NEWOBJ would create an object by calling a class's __new__"},
        {"\x92", "NEWOBJ_EX would create an object by calling a class's __new__"},
        {"\x82", "EXT1 would import an object from the copyreg extension registry"},
        {"Q", "BINPERSID would ask the loader for a persistent object"},
        {"\x97", "NEXT_BUFFER would take an out-of-band buffer"},
        {"iposix\nsystem\n", "INST would import 'posix.system' and create an instance of it"},
    };
    for (const auto& [op, says] : refused) {
        const std::string message = refusal("\x80\x04" + op + ".");
        BOOST_TEST(message.starts_with("x.pickle: offset 2: pickle opcode " + says + ": refused"),
                   message);
    }
}

BOOST_AUTO_TEST_CASE(sets_and_protocol_0_are_refused) {
    const auto fixture = [](const std::string& name) {
        return refusal(ppb_test::read_file(plain_dir + name));
    };
    BOOST_TEST(fixture("set.pickle")
                       .find("offset 11: pickle opcode EMPTY_SET builds a set, which "
                             "a memory snapshot does not hold: refused") != std::string::npos,
               fixture("set.pickle"));
    BOOST_TEST(fixture("frozenset.pickle").find("FROZENSET builds a set") != std::string::npos);
    BOOST_TEST(refusal(ppb_test::from_hex("80 02 49 31 0a 2e")) ==
               "x.pickle: offset 2: pickle opcode INT is an opcode of protocol 0 (text); ppb reads "
               "pickles of protocols 2 to 5, which Python and PyTorch write");
}

BOOST_AUTO_TEST_CASE(malformed_and_cut_pickles_are_refused_where_they_go_wrong) {
    const std::pair<std::string, std::string> cases[] = {
        {std::string(), "x.pickle: offset 0: the file is empty: a memory snapshot is a pickle"},
        {"{}",
         "x.pickle: offset 0: the file does not begin with a pickle's PROTO opcode (0x80) but "
         "with 0x7B: it is not a pickle of protocol 2 to 5 (is it a memory snapshot, pickled "
         "by torch.cuda.memory._dump_snapshot?)"},
        {ppb_test::from_hex("80 02"),
         "x.pickle: offset 2: the pickle ends without its STOP opcode (the file has 2 bytes): is "
         "the file cut short, a run killed while writing it or a partial copy?"},
        {ppb_test::from_hex("80 06 4e 2e"),
         "x.pickle: offset 0: opcode PROTO says protocol 6: ppb reads pickles of protocols 2 to 5"},
        {ppb_test::from_hex("80 02 4e 2e 78"),
         "x.pickle: offset 4: 1 byte after the pickle's STOP opcode: a memory snapshot file is one "
         "pickle"},
        {ppb_test::from_hex("80 02 4e 4e 2e"),
         "x.pickle: offset 4: opcode STOP leaves 1 value and 0 MARKs behind: a malformed pickle"},
        {ppb_test::from_hex("80 02 68 05 2e"),
         "x.pickle: offset 2: opcode BINGET refers to memo entry 5, which was never stored"},
        {ppb_test::from_hex("80 02 61 2e"),
         "x.pickle: offset 2: opcode APPEND needs the value to append on the stack, and there is "
         "none"},
        {ppb_test::from_hex("80 02 7d 4b 01 61 2e"),
         "x.pickle: offset 5: opcode APPEND appends to a list, not a dict"},
        {ppb_test::from_hex("80 02 7d 28 4b 01 75 2e"),
         "x.pickle: offset 6: opcode SETITEMS gets 1 values: a key without its value"},
        {ppb_test::from_hex("80 02 74 2e"),
         "x.pickle: offset 2: opcode TUPLE needs a MARK before it, and there is none"},
        {ppb_test::from_hex("80 02 28 61 2e"),
         "x.pickle: offset 3: opcode APPEND needs the value to append on the stack, and there is "
         "none after the last MARK"},
        {ppb_test::from_hex("80 02 58 ff 00 00 00 61 62 2e"),
         "x.pickle: offset 2: opcode BINUNICODE needs 255 bytes of the string, but the file ends "
         "3 bytes later (it has 10 bytes): is it cut short, a run killed while writing it or a "
         "partial copy?"},
        {ppb_test::from_hex("80 02 ff 2e"),
         "x.pickle: offset 2: 0xFF is not a pickle opcode: the file is not a pickle, or it is "
         "damaged"},
        {ppb_test::from_hex("80 04 95 ff 00 00 00 00 00 00 00 4e 2e"),
         "x.pickle: offset 2: opcode FRAME announces a frame of 255 bytes, but the file ends 2 "
         "bytes later (it has 13 bytes): is it cut short, a run killed while writing it or a "
         "partial copy?"},
        {ppb_test::from_hex("80 02 8b ff ff ff ff 2e"),
         "x.pickle: offset 2: opcode LONG4 gives a negative length, -1"},
    };
    for (const auto& [bytes, message] : cases)
        BOOST_TEST(refusal(bytes) == message);
}

BOOST_AUTO_TEST_CASE(every_cut_of_a_snapshot_is_refused_cleanly) {
    // Each prefix of a real-shaped snapshot (protocol 2: no frames to announce the cut) fails
    // with InputError, never reads past its end (the sanitizer stage watches).
    const std::string whole = ppb_test::read_file(plain_dir + "../megatron/snapshot_0.pickle");
    for (std::size_t n = 0; n < whole.size(); n += 97)
        BOOST_TEST(!refusal(whole.substr(0, n)).empty());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace plain_pickle_tests
