"""A tiny name -> object registry: the one extension mechanism of twolayer.

Every pluggable concept (activations, nets, losses, initializations, datasets, training methods,
observables) is a ``Registry``. Adding a variant is adding one decorated function or one entry;
nothing dispatches on names with if-chains.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    """The fields every registry entry of the engine shares (observables, objectives, training methods,
    datasets, initializations, events): ``name``; ``fn``, what the entry does (an observable's function,
    a method's or a dataset's builder, an init's sampler, an event detector); ``doc``; ``needs``, the
    context arrays it reads (``twolayer.problem.CONTEXT``); ``nets``, the architectures it supports
    (``model.kind``; empty: every one). Each registry's record adds what else its entries support, as
    keyword-only fields. Behaviour is read from these fields, never from an entry's name."""

    name: str
    fn: Callable
    doc: str = ""
    needs: tuple[str, ...] = ()
    nets: tuple[str, ...] = ()

    def supports(self, net: str) -> bool:
        """Whether the entry applies to ``model.kind`` ``net``."""
        return not self.nets or net in self.nets


class UnknownNameError(KeyError):
    """Raised when a name is not registered; the message lists the allowed names."""

    def __init__(self, kind: str, name: object, allowed: list[str]):
        self.kind, self.name, self.allowed = kind, name, allowed
        super().__init__(f"{name!r} is not one of {', '.join(allowed)}")

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return self.args[0]


class Registry(Generic[T]):
    """An ordered mapping from names to registered objects of one kind."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str, obj: T | None = None):
        """Register ``obj`` under ``name``; without ``obj``, return a decorator."""
        if obj is not None:
            self._add(name, obj)
            return obj

        def decorator(fn: T) -> T:
            self._add(name, fn)
            return fn

        return decorator

    def _add(self, name: str, obj: T) -> None:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = obj

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise UnknownNameError(self.kind, name, self.names()) from None

    def names(self) -> list[str]:
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def items(self):
        return self._items.items()


def registered(registry: Registry, name: str) -> Callable:
    """Decorator form: ``@registered(OBSERVABLES, "loss")``."""
    return registry.register(name)
