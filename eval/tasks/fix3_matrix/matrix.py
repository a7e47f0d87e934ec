"""A small dense matrix: construction, transpose, arithmetic, products, powers and determinants."""

from __future__ import annotations

import math
from typing import Sequence, Union

Number = Union[int, float]


class Matrix:
    """An immutable rows x cols matrix of numbers."""

    def __init__(self, rows: Sequence[Sequence[Number]]) -> None:
        if not rows or not rows[0]:
            raise ValueError("a matrix needs at least one row and one column")
        width = len(rows[0])
        if any(len(row) != width for row in rows):
            raise ValueError("all rows must have the same length")
        self._data: list[list[Number]] = [list(row) for row in rows]

    @classmethod
    def identity(cls, size: int) -> Matrix:
        return cls([[1 if i == j else 0 for j in range(size)] for i in range(size)])

    @classmethod
    def zeros(cls, rows: int, cols: int) -> Matrix:
        return cls([[0] * cols for _ in range(rows)])

    @property
    def rows(self) -> int:
        return len(self._data)

    @property
    def cols(self) -> int:
        return len(self._data[0])

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, self.cols

    def __getitem__(self, position: tuple[int, int]) -> Number:
        i, j = position
        return self._data[i][j]

    def tolist(self) -> list[list[Number]]:
        return [list(row) for row in self._data]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Matrix):
            return NotImplemented
        return self._data == other._data

    def isclose(self, other: Matrix, tolerance: float = 1e-9) -> bool:
        return self.shape == other.shape and all(
            math.isclose(a, b, abs_tol=tolerance)
            for row, other_row in zip(self._data, other._data)
            for a, b in zip(row, other_row)
        )

    def __repr__(self) -> str:
        return f"Matrix({self._data!r})"

    def transpose(self) -> Matrix:
        return Matrix([list(column) for column in zip(*self._data)])

    def __add__(self, other: Matrix) -> Matrix:
        if self.shape != other.shape:
            raise ValueError(f"cannot add {self.shape} and {other.shape} matrices")
        return Matrix([[a + b for a, b in zip(r1, r2)] for r1, r2 in zip(self._data, other._data)])

    def scale(self, factor: Number) -> Matrix:
        return Matrix([[factor * value for value in row] for row in self._data])

    def __matmul__(self, other: Matrix) -> Matrix:
        """The matrix product; ``self.cols`` must equal ``other.rows``."""
        if self.cols != other.rows:
            raise ValueError(f"cannot multiply {self.shape} by {other.shape}")
        result = []
        for i in range(self.rows):
            row = []
            for j in range(other.cols):
                total: Number = 0
                for k in range(other.cols):
                    total += self._data[i][k] * other._data[k][j]
                row.append(total)
            result.append(row)
        return Matrix(result)

    def __pow__(self, exponent: int) -> Matrix:
        """Repeated product of a square matrix with itself, by squaring."""
        if self.rows != self.cols:
            raise ValueError("only a square matrix has powers")
        if exponent < 0:
            raise ValueError("negative powers are not supported")
        result = Matrix.identity(self.rows)
        base = self
        while exponent:
            if exponent & 1:
                result = result @ base
            base = base @ base
            exponent >>= 1
        return result

    def determinant(self) -> float:
        """Gaussian elimination with partial pivoting."""
        if self.rows != self.cols:
            raise ValueError("only a square matrix has a determinant")
        a = [[float(value) for value in row] for row in self._data]
        size = self.rows
        det = 1.0
        for col in range(size):
            pivot = max(range(col, size), key=lambda r: abs(a[r][col]))
            if a[pivot][col] == 0:
                return 0.0
            if pivot != col:
                a[col], a[pivot] = a[pivot], a[col]
                det = -det
            det *= a[col][col]
            for r in range(col + 1, size):
                factor = a[r][col] / a[col][col]
                for c in range(col, size):
                    a[r][c] -= factor * a[col][c]
        return det
