import pytest

from matrix import Matrix


def test_construction_and_shape():
    m = Matrix([[1, 2, 3], [4, 5, 6]])
    assert m.shape == (2, 3)
    assert m[1, 2] == 6
    assert Matrix.zeros(2, 2).tolist() == [[0, 0], [0, 0]]
    with pytest.raises(ValueError):
        Matrix([[1, 2], [3]])
    with pytest.raises(ValueError):
        Matrix([])


def test_transpose_and_equality():
    m = Matrix([[1, 2, 3], [4, 5, 6]])
    assert m.transpose() == Matrix([[1, 4], [2, 5], [3, 6]])
    assert m.transpose().transpose() == m
    assert m != Matrix([[1, 2, 3], [4, 5, 7]])
    assert Matrix([[0.1 + 0.2]]).isclose(Matrix([[0.3]]))


def test_add_and_scale():
    a = Matrix([[1, 2], [3, 4]])
    assert a + a == a.scale(2)
    with pytest.raises(ValueError):
        a + Matrix([[1, 2, 3]])


def test_square_product_and_identity():
    a = Matrix([[1, 2], [3, 4]])
    b = Matrix([[0, 1], [1, 0]])
    assert a @ b == Matrix([[2, 1], [4, 3]])
    assert Matrix.identity(2) @ a == a
    wide = Matrix([[1, 2, 3], [4, 5, 6]])
    assert wide @ Matrix.identity(3) == wide


def test_product_of_non_square_matrices():
    a = Matrix([[1, 2, 3], [4, 5, 6]])
    b = Matrix([[7, 8], [9, 10], [11, 12]])
    assert a @ b == Matrix([[58, 64], [139, 154]])
    with pytest.raises(ValueError):
        a @ a


def test_powers():
    fib = Matrix([[1, 1], [1, 0]])
    assert (fib ** 10)[0, 1] == 55
    assert fib ** 0 == Matrix.identity(2)
    with pytest.raises(ValueError):
        Matrix([[1, 2]]) ** 2


def test_determinant():
    assert Matrix([[4, 3], [6, 3]]).determinant() == pytest.approx(-6)
    assert Matrix([[0, 1], [1, 0]]).determinant() == pytest.approx(-1)
    assert Matrix([[2, 0, 1], [1, 3, 2], [1, 1, 2]]).determinant() == pytest.approx(6)
    assert Matrix([[0, 2, 1], [1, 1, 1], [2, 1, 3]]).determinant() == pytest.approx(-3)
    assert Matrix([[1, 2], [2, 4]]).determinant() == 0
    assert Matrix.identity(4).determinant() == 1
