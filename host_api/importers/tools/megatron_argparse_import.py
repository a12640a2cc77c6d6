"""Writes the facts of Megatron-LM's argparse parser as JSON (to $DUMP_OUT), for releases whose
arguments.py generates flags from dataclasses (ArgumentGroupFactory, from core_v0.16.0).

Run in a directory holding an exported megatron/ package. Megatron-LM is imported for real, so
that the dataclass fields become flags exactly as Megatron's own code makes them; what it needs
and this machine lacks is stood in for: PyTorch (any torch module: attribute access gives further
stand-ins, classes for capitalised names) and any other module an import fails on (a MagicMock).
Only add_megatron_arguments() is called: no training code runs. Used by megatron_flags.py.
"""
import argparse
import enum
import importlib
import importlib.machinery
import json
import os
import re
import sys
import types
import typing
from unittest import mock

sys.path.insert(0, os.getcwd())


class Anything(mock.MagicMock):
    pass


class StandInClass(typing._ProtocolMeta):
    """A stand-in for a torch class: usable as a base, in annotations and in unions."""

    def __getattr__(cls, attr):
        if attr.startswith('__'):
            raise AttributeError(attr)
        value = Anything(name=attr)
        setattr(cls, attr, value)
        return value

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls


class StandInModule(types.ModuleType):
    """A stand-in for a torch module: callable, subscriptable, attributes on demand."""

    def __call__(self, *args, **kwargs):
        return Anything(name=self.__name__)

    def __bool__(self):
        return True

    def __or__(self, other):
        return self

    def __ror__(self, other):
        return self

    def __getitem__(self, item):
        return self

    def __iter__(self):
        return iter(())

    def __getattr__(self, attr):
        if attr.startswith('__'):
            raise AttributeError(attr)
        if attr[:1].isupper():
            value = StandInClass(attr, (), {
                '__init__': lambda self, *a, **k: None,
                '__class_getitem__': classmethod(lambda c, i: c),
                '__getattr__': lambda self, a: Anything(name=a)})
        else:
            value = StandInModule(self.__name__ + '.' + attr)
            value.__path__ = []
        setattr(self, attr, value)
        return value


class TorchFinder:
    """Imports of torch and its submodules give stand-ins."""

    def find_spec(self, name, path, target=None):
        if name.split('.')[0] == 'torch':
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = StandInModule(spec.name)
        module.__path__ = []
        if spec.name == 'torch':
            module.__version__ = '2.10.0'
        return module

    def exec_module(self, module):
        pass


# Annotations such as Union[SomeStandIn, ...] would fail typing's checks.
_type_convert = typing._type_convert


def _lenient_type_convert(arg, module=None, *, allow_special_forms=False):
    if isinstance(arg, mock.Base):
        return object
    return _type_convert(arg, module=module, allow_special_forms=allow_special_forms)


typing._type_convert = _lenient_type_convert
sys.meta_path.insert(0, TorchFinder())


def stand_in(name):
    parts = name.split('.')
    for i in range(1, len(parts) + 1):
        full = '.'.join(parts[:i])
        if full not in sys.modules:
            module = Anything(name=full)
            module.__path__ = []
            module.__spec__ = None
            module.__version__ = '3.5.0'
            sys.modules[full] = module
        if i > 1:
            try:
                setattr(sys.modules['.'.join(parts[:i - 1])], parts[i - 1], sys.modules[full])
            except Exception:
                pass


def forget_megatron():
    for name in list(sys.modules):
        if name == 'megatron' or name.startswith('megatron.'):
            del sys.modules[name]


def import_arguments():
    stood_in = []
    for _ in range(400):
        try:
            return importlib.import_module('megatron.training.arguments'), stood_in
        except ImportError as error:
            text = str(error)
            missing = re.search(r"No module named '([^']+)'", text)
            if missing:
                stand_in(missing.group(1))
                stood_in.append(missing.group(1))
            else:
                name = re.search(r"cannot import name '([^']+)' from '([^']+)'", text)
                if not name or name.group(2).startswith('megatron'):
                    raise
                parent = sys.modules.get(name.group(2))
                full = name.group(2) + '.' + name.group(1)
                if parent is not None and not isinstance(parent, mock.MagicMock):
                    setattr(parent, name.group(1), Anything(name=full))
                else:
                    stand_in(full)
                stood_in.append(full)
            forget_megatron()
    raise SystemExit('megatron.training.arguments did not import')


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
    arguments, stood_in = import_arguments()
    parser = argparse.ArgumentParser(description='Megatron-LM Arguments', allow_abbrev=False)
    parser = arguments.add_megatron_arguments(parser) or parser
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
                   'fromfile_prefix_chars': parser.fromfile_prefix_chars, 'stood_in': stood_in,
                   'actions': actions}, out, indent=1)


main()
