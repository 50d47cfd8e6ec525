"""3 x 3 colour-matrix arithmetic with the same bits on every CPU.

numpy's ``@`` and ``numpy.linalg`` hand even a 3 x 3 product or inverse to BLAS/LAPACK, whose kernels
(and so the rounding of their sums) depend on the CPU: a camera matrix derived on one machine differed
from the same derivation on another in its last bits, and a last bit can move an 8-bit pixel across a
rounding boundary. These helpers use Python float arithmetic in a fixed order (each product and sum
rounded on its own: the interpreter never fuses them), so a colour matrix is the same everywhere.

Examples
--------
>>> from hetbench.isp.matrix3 import inverse, matmul
>>> m = [[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [1.0, 0.0, 1.0]]
>>> matmul(m, inverse(m)).tolist()
[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def rows(matrix) -> list[list[float]]:
    """``matrix`` as three lists of three Python floats (a ValueError unless it holds 9 values)."""
    return [[float(v) for v in row] for row in np.asarray(matrix, np.float64).reshape(3, 3).tolist()]


def determinant(m: Sequence[Sequence[float]]) -> float:
    """The determinant by cofactors along the first row.

    Examples
    --------
    >>> from hetbench.isp.matrix3 import determinant
    >>> determinant([[1.0, 2.0, 3.0], [0.0, 1.0, 4.0], [5.0, 6.0, 0.0]])
    1.0
    """
    return (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))


def matmul(a, b) -> np.ndarray:
    """``a @ b``: each entry ``(a_i0 b_0j + a_i1 b_1j) + a_i2 b_2j``; float64 (3, 3)."""
    x, y = rows(a), rows(b)
    return np.array([[(x[i][0] * y[0][j] + x[i][1] * y[1][j]) + x[i][2] * y[2][j] for j in range(3)] for i in range(3)])


def matvec(a, v) -> np.ndarray:
    """``a @ v`` for a (3,) vector; float64 (3,).

    Examples
    --------
    >>> from hetbench.isp.matrix3 import matvec
    >>> matvec([[1.0, 2.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 3.0]], [1.0, 1.0, 1.0]).tolist()
    [3.0, 1.0, 3.0]
    """
    x, w = rows(a), [float(c) for c in np.asarray(v, np.float64).reshape(3)]
    return np.array([(r[0] * w[0] + r[1] * w[1]) + r[2] * w[2] for r in x])


def inverse(a) -> np.ndarray:
    """``a^-1`` by the adjugate over the determinant; float64 (3, 3).

    Raises
    ------
    ValueError
        A singular (or non-finite) matrix.

    Examples
    --------
    >>> from hetbench.isp.matrix3 import inverse
    >>> inverse([[2.0, 0.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, 1.0]]).tolist()
    [[0.5, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]]
    """
    m = rows(a)
    d = determinant(m)
    if d == 0 or not np.isfinite(d):
        raise ValueError("singular colour matrix")
    cof = [[m[(i + 1) % 3][(j + 1) % 3] * m[(i + 2) % 3][(j + 2) % 3]
            - m[(i + 1) % 3][(j + 2) % 3] * m[(i + 2) % 3][(j + 1) % 3] for j in range(3)] for i in range(3)]
    return np.array([[cof[j][i] / d for j in range(3)] for i in range(3)])  # adjugate = cofactors transposed


def solve(m, b) -> list[float]:
    """``m^-1 b`` by Cramer's rule.

    Examples
    --------
    >>> from hetbench.isp.matrix3 import solve
    >>> solve([[2.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 1.0]], [2.0, 2.0, 3.0])
    [1.0, 0.5, 3.0]
    """
    a0 = rows(m)
    d = determinant(a0)
    if d == 0:
        raise ValueError("singular colour matrix")
    out = []
    for c in range(3):
        a = [row[:] for row in a0]
        for r in range(3):
            a[r][c] = float(b[r])
        out.append(determinant(a) / d)
    return out
