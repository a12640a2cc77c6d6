"""Writes the facts of Megatron-LM's argparse parser as JSON (to $DUMP_OUT), for releases whose
arguments.py declares every flag with add_argument (up to core_v0.15).

Run in a directory holding an exported megatron/ package. Only arguments.py is executed: its
import statements are replaced by stand-ins (MagicMock), except the standard library's and the
enums it imports (real, read from their own small files), so that enum choices keep their names.
Its functions then build the parser: add_megatron_arguments() where it exists, else parse_args()
up to the point where it would parse (the parser is taken there). Used by megatron_flags.py.
"""
import argparse
import ast
import dataclasses
import enum
import json
import logging
import os
import re
import sys
import types
import typing
import warnings
from unittest import mock

STANDARD = {m.__name__: m for m in (argparse, dataclasses, enum, json, logging, os, re, types,
                                    typing, warnings)}


def enums_module(module):
    path = module.replace('.', '/') + '.py'
    namespace = {'__name__': module}
    try:
        exec(compile(open(path).read(), path, 'exec'), namespace)
    except Exception:
        return None
    return namespace


def load_arguments_module(path):
    tree = ast.parse(open(path).read())
    namespace = {'__name__': 'megatron_arguments_facts', '__builtins__': __builtins__}
    namespace.update(STANDARD)
    body = []
    for node in tree.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            body.append(node)
            continue
        for alias in node.names:
            name = alias.asname or alias.name.split('.')[0]
            if isinstance(node, ast.Import) and alias.name in STANDARD:
                continue
            value = None
            if isinstance(node, ast.ImportFrom) and node.module == 'typing':
                value = getattr(typing, alias.name)
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.endswith('enums'):
                enums = enums_module(node.module)
                value = enums.get(alias.name) if enums else None
            namespace[name] = value if value is not None else mock.MagicMock(name=name)
    exec(compile(ast.Module(body=body, type_ignores=[]), path, 'exec'), namespace)
    return namespace


class Captured(Exception):
    def __init__(self, parser):
        super().__init__()
        self.parser = parser


def build_parser(namespace):
    if 'add_megatron_arguments' in namespace:
        parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
        return namespace['add_megatron_arguments'](parser) or parser

    def capture(self, *args, **kwargs):
        raise Captured(self)

    argparse.ArgumentParser.parse_args = capture
    argparse.ArgumentParser.parse_known_args = capture
    try:
        namespace['parse_args']()
    except Captured as captured:
        return captured.parser
    raise SystemExit('parse_args() did not reach the parser')


def fact(value):
    if isinstance(value, enum.Enum):
        return value.name
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [fact(v) for v in value]
    return {'opaque': repr(value)[:80]}


def type_name(t):
    return None if t is None else getattr(t, '__name__', type(t).__name__)


def main():
    sys.path.insert(0, os.getcwd())
    path = 'megatron/training/arguments.py'
    if not os.path.exists(path):
        path = 'megatron/arguments.py'
    parser = build_parser(load_arguments_module(path))
    actions = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        actions.append({
            'flags': list(action.option_strings), 'dest': action.dest,
            'action': type(action).__name__, 'nargs': action.nargs,
            'type': type_name(action.type), 'default': fact(action.default),
            'const': fact(action.const),
            'choices': fact(list(action.choices)) if action.choices is not None else None})
    with open(os.environ['DUMP_OUT'], 'w') as out:
        json.dump({'allow_abbrev': parser.allow_abbrev, 'prefix_chars': parser.prefix_chars,
                   'fromfile_prefix_chars': parser.fromfile_prefix_chars, 'file': path,
                   'actions': actions}, out, indent=1)


main()
