"""A tiny name -> object registry: the one extension mechanism of twolayer.

Every pluggable concept (activations, nets, losses, initializations, datasets, training methods,
observables) is a ``Registry``. Adding a variant is adding one decorated function or one entry;
nothing dispatches on names with if-chains.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


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
