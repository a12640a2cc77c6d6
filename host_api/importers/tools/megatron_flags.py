#!/usr/bin/env python3
"""Regenerates ppb's table of Megatron-LM's command-line flags from Megatron-LM's own parser.

    megatron_flags.py MEGATRON_GIT_DIR PPB_ROOT

For every release of RELEASES, the release's megatron/ package is exported from the Megatron-LM
git directory (a clone or mirror of NVIDIA/Megatron-LM) into a temporary directory and its
argparse parser is built there, without a GPU or Megatron's dependencies:

* releases whose arguments.py declares every flag with add_argument (up to core_v0.15) are read
  by megatron_argparse_ast.py, which runs only that file's functions with its imports replaced;
* later releases generate part of their flags from dataclasses (ArgumentGroupFactory), so
  megatron_argparse_import.py imports Megatron with PyTorch and missing packages stood in for.

Each parser's actions (option strings, dest, action, nargs, type, default, choices) are facts;
consecutive releases where a flag's facts are equal become one record. The records are written
as the C++ table host_api/importers/src/megatron_flags.cpp and as the test data
tests/data/megatron/argparse-flags.tsv that test_megatron_flags.cpp checks the table against.
Run with the system Python 3 (python3 -m venv not needed); it reads, never runs, Megatron's
training code.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# (name users give --megatron-version, git ref, ref shown in the sources)
RELEASES = [
    ('2.6', 'v2.6'),
    ('23.04', '23.04'),
    ('23.06', '23.06'),
] + [('0.%d' % i, 'core_v0.%d.0' % i) for i in range(4, 20)] + [
    ('main', 'd98e8a64ddf34856e74b24714e3bedb2f5a39553'),
]

# The kitchen quantization flags are declared only where NVIDIA's kitchen package imports
# (arguments.py, _add_kitchen_quantization_arguments): the table knows them wherever the file
# declares them, with the facts the file gives.
KITCHEN = [
    {'flags': ['--kitchen-config-file'], 'dest': 'kitchen_config_file', 'action': '_StoreAction',
     'nargs': None, 'type': 'str', 'default': None, 'const': None, 'choices': None},
    {'flags': ['--kitchen-recipe-number'], 'dest': 'kitchen_recipe_number',
     'action': '_StoreAction', 'nargs': None, 'type': 'int', 'default': None, 'const': None,
     'choices': None},
]


def git(mirror, *args):
    return subprocess.run(['git', '--git-dir', mirror] + list(args), check=True,
                          capture_output=True, text=True).stdout


def arguments_file(mirror, ref):
    for path in ('megatron/training/arguments.py', 'megatron/arguments.py'):
        if subprocess.run(['git', '--git-dir', mirror, 'cat-file', '-e', '%s:%s' % (ref, path)],
                          capture_output=True).returncode == 0:
            return path
    raise SystemExit('%s: no arguments.py' % ref)


def extract(mirror, ref):
    path = arguments_file(mirror, ref)
    source = git(mirror, 'show', '%s:%s' % (ref, path))
    tool = 'megatron_argparse_import.py' if 'ArgumentGroupFactory' in source else \
        'megatron_argparse_ast.py'
    with tempfile.TemporaryDirectory() as tree:
        archive = subprocess.run(['git', '--git-dir', mirror, 'archive', ref, 'megatron'],
                                 check=True, capture_output=True).stdout
        subprocess.run(['tar', '-x', '-C', tree], input=archive, check=True)
        out = os.path.join(tree, 'facts.json')
        run = subprocess.run([sys.executable, os.path.join(HERE, tool)], cwd=tree,
                             env=dict(os.environ, DUMP_OUT=out), capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit('%s: %s failed:\n%s' % (ref, tool, run.stderr[-3000:]))
        facts = json.load(open(out))
    if facts['allow_abbrev'] or facts['prefix_chars'] != '-' or facts['fromfile_prefix_chars']:
        raise SystemExit('%s: the parser no longer has allow_abbrev=False, prefix "-", no '
                         'argument files: ppb reads arguments under those rules' % ref)
    if "'--kitchen-config-file'" in source:
        facts['actions'].extend(KITCHEN)
    commit = git(mirror, 'rev-parse', ref + '^{commit}').strip()
    date = git(mirror, 'log', '-1', '--format=%cs', commit).strip()
    return facts, path, commit, date


def value_type(action):
    if action['action'] != '_StoreAction':
        return 'none'
    t = action['type']
    return {None: 'text', 'str': 'text', 'int': 'integer', 'float': 'real',
            'bool': 'boolean'}.get(t, 'custom')


def nargs_of(action):
    n = action['nargs']
    if action['action'] != '_StoreAction':
        return ('none', 0)
    if n is None:
        return ('one', 1)
    return {'?': ('optional', 0), '*': ('any', 0), '+': ('at_least_one', 0)}.get(n, ('exactly', n))


ACTIONS = {'_StoreAction': 'store', '_StoreTrueAction': 'store_true',
           '_StoreFalseAction': 'store_false', 'BooleanOptionalAction': 'boolean_optional'}


def facts_of(action, sets_default):
    if action['action'] not in ACTIONS:
        raise SystemExit('unexpected argparse action %s for %s' % (action['action'],
                                                                   action['flags']))
    nargs = nargs_of(action)
    choices = action['choices']
    choice_text = '|'.join(str(c) for c in choices if c is not None) if choices else ''
    return (action['dest'], ACTIONS[action['action']], nargs[0], nargs[1], value_type(action),
            choice_text, json.dumps(action['default'], separators=(',', ':')), sets_default)


def consolidate(per_release):
    flags = {}
    for index, facts in enumerate(per_release):
        # argparse gives an attribute the default of the first action (in declaration order)
        # that sets it.
        dests = set()
        for action in facts['actions']:
            sets_default = action['dest'] not in dests
            dests.add(action['dest'])
            for flag in action['flags']:
                flags.setdefault(flag, {})[index] = facts_of(action, sets_default)
    records = []
    for flag in sorted(flags):
        current = None
        for index in range(len(per_release)):
            facts = flags[flag].get(index)
            if facts is None:
                current = None
                continue
            if current and current['facts'] == facts and current['last'] == index - 1:
                current['last'] = index
            else:
                current = {'flag': flag, 'first': index, 'last': index, 'facts': facts}
                records.append(current)
    return records


def cpp_string(text):
    return json.dumps(text)  # a C++ string literal for the characters these facts use


def write_table(root, releases, records):
    lines = []
    w = lines.append
    w('// Every flag Megatron-LM\'s argparse parser knows, per release: the facts of')
    w('// megatron/training/arguments.py (megatron/arguments.py before core_v0.6.0) of')
    w('// NVIDIA/Megatron-LM at each release below, read from the parser the file builds')
    w('// (parser._actions). GENERATED by host_api/importers/tools/megatron_flags.py: regenerate,')
    w('// never edit (tests/data/megatron/argparse-flags.tsv holds the same facts for the test).')
    w('//')
    w('// Releases (name given to --megatron-version, tag, commit of arguments.py, commit date):')
    for name, ref, path, commit, date in releases:
        w('//   %-5s %-12s %s %s %s' % (name, ref if len(ref) < 20 else 'main', commit, date, path))
    w('#include <ppb/importers/megatron_flags.hpp>')
    w('')
    w('#include <algorithm>')
    w('#include <array>')
    w('')
    w('namespace ppb::importers::megatron {')
    w('namespace {')
    w('')
    w('constexpr std::array<Release, %d> release_table{{' % len(releases))
    for name, ref, path, commit, date in releases:
        tag = ref if len(ref) < 20 else 'main'
        w('    {%s, %s, %s, %s},' % (cpp_string(name), cpp_string(tag), cpp_string(commit),
                                    cpp_string(date)))
    w('}};')
    w('')
    w('using A = FlagAction;')
    w('using N = FlagArity;')
    w('using T = FlagValueType;')
    w('')
    w('// Sorted by name, then release.')
    w('constexpr std::array<Flag, %d> flag_table{{' % len(records))
    for r in records:
        dest, action, arity, count, vtype, choices, default, sets_default = r['facts']
        w('    {%s, %s, A::%s, N::%s, %d, T::%s, %s, %s, %s, %d, %d},' % (
            cpp_string(r['flag']), cpp_string(dest), action, arity, count, vtype,
            cpp_string(choices), cpp_string(default), 'true' if sets_default else 'false',
            r['first'], r['last']))
    w('}};')
    w('')
    w('}  // namespace')
    w('')
    w('std::span<const Release> releases() { return release_table; }')
    w('')
    w('std::span<const Flag> flags() { return flag_table; }')
    w('')
    w('std::span<const Flag> flag_records(std::string_view name) {')
    w('    const auto range = std::equal_range(flag_table.begin(), flag_table.end(), name,')
    w('                                        FlagNameLess{});')
    w('    return {range.first, range.second};')
    w('}')
    w('')
    w('}  // namespace ppb::importers::megatron')
    path = os.path.join(root, 'host_api/importers/src/megatron_flags.cpp')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    subprocess.run(['clang-format', '-i', path], cwd=root, check=True)


def write_facts(root, releases, records):
    out = os.path.join(root, 'tests/data/megatron/argparse-flags.tsv')
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'w') as f:
        f.write('# The flags of Megatron-LM\'s argparse parser (NVIDIA/Megatron-LM, the file and\n'
                '# commit of each release below), as parser._actions gives them; one row per flag\n'
                '# and run of consecutive releases with the same facts. Columns: flag, first and\n'
                '# last release (names below), dest, action, nargs (one, optional ?, any *,\n'
                '# at_least_one +, exactly N, none for switches), value type, choices (|), default\n'
                '# (JSON), and "default" when the flag is the first declared for its dest (whose\n'
                '# default argparse applies; "-" otherwise). Extracted by\n'
                '# host_api/importers/tools/megatron_flags.py.\n')
        for name, ref, path, commit, date in releases:
            f.write('# release %s %s %s %s\n' % (name, commit, date, path))
        for r in records:
            dest, action, arity, count, vtype, choices, default, sets_default = r['facts']
            nargs = 'exactly %d' % count if arity == 'exactly' else arity
            f.write('\t'.join([r['flag'], releases[r['first']][0], releases[r['last']][0], dest,
                               action, nargs, vtype, choices, default,
                               'default' if sets_default else '-']) + '\n')


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    mirror, root = sys.argv[1], sys.argv[2]
    per_release, releases = [], []
    for name, ref in RELEASES:
        facts, path, commit, date = extract(mirror, ref)
        per_release.append(facts)
        releases.append((name, ref, path, commit, date))
        print('%-5s %s: %d actions' % (name, ref, len(facts['actions'])), file=sys.stderr)
    records = consolidate(per_release)
    write_table(root, releases, records)
    write_facts(root, releases, records)
    print('%d records of %d flags' % (len(records), len({r['flag'] for r in records})),
          file=sys.stderr)


if __name__ == '__main__':
    main()
