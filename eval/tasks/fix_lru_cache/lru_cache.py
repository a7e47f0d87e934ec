from collections import OrderedDict
from functools import wraps
from threading import RLock
from typing import Any, Callable, Generic, Hashable, Iterator, Optional, Tuple, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_MISSING = object()


class LRUCache(Generic[K, V]):
    """A fixed-size mapping that evicts the least recently used entry.

    Both reads (get) and writes (put) count as a "use". Membership tests
    and peek() do not change the order.
    """

    def __init__(self, capacity: int, on_evict: Optional[Callable[[K, V], None]] = None):
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self.capacity = capacity
        self._data: "OrderedDict[K, V]" = OrderedDict()
        self._lock = RLock()
        self._on_evict = on_evict
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[K]:
        # least recently used first
        return iter(list(self._data))

    def get(self, key: K, default: Any = None) -> Any:
        with self._lock:
            value = self._data.get(key, _MISSING)
            if value is _MISSING:
                self.misses += 1
                return default
            self.hits += 1
            return value

    def peek(self, key: K, default: Any = None) -> Any:
        return self._data.get(key, default)

    def put(self, key: K, value: V) -> None:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
            self._data[key] = value
            while len(self._data) > self.capacity:
                old_key, old_value = self._data.popitem(last=False)
                if self._on_evict is not None:
                    self._on_evict(old_key, old_value)

    def pop(self, key: K, default: Any = _MISSING) -> Any:
        with self._lock:
            if default is _MISSING:
                return self._data.pop(key)
            return self._data.pop(key, default)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def items(self) -> Iterator[Tuple[K, V]]:
        return iter(list(self._data.items()))

    def resize(self, capacity: int) -> None:
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        with self._lock:
            self.capacity = capacity
            while len(self._data) > capacity:
                old_key, old_value = self._data.popitem(last=False)
                if self._on_evict is not None:
                    self._on_evict(old_key, old_value)

    @property
    def hit_rate(self) -> float:
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


def lru_memoize(capacity: int = 128):
    """Decorator caching a function's results by its positional args."""

    def decorator(fn):
        cache: LRUCache = LRUCache(capacity)

        @wraps(fn)
        def wrapper(*args):
            result = cache.get(args, _MISSING)
            if result is _MISSING:
                result = fn(*args)
                cache.put(args, result)
            return result

        wrapper.cache = cache
        return wrapper

    return decorator
