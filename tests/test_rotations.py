"""Property tests of the RRP rotation algebra (docs/theory.md §1)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import logm
from scipy.spatial.transform import Rotation

from dem import rotations as rot

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
vectors = st.lists(finite, min_size=3, max_size=3).map(np.array)
# rotation vectors with angle up to pi - 1e-4 (the RRP chart is singular at pi)
unit = st.lists(st.floats(-1, 1), min_size=3, max_size=3).map(np.array).filter(lambda v: np.linalg.norm(v) > 1e-3)
rotvecs = st.builds(lambda u, a: a * u / np.linalg.norm(u), unit, st.floats(0.0, np.pi - 1e-4))
quaternions = st.lists(st.floats(-1, 1), min_size=4, max_size=4).map(np.array).filter(
    lambda q: np.linalg.norm(q) > 1e-2).map(lambda q: q / np.linalg.norm(q))


def skew(a):
    return np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


@given(vectors)
def test_rrp_matrix_is_a_rotation(alpha):
    matrix = rot.rrp_matrix(alpha)
    assert np.abs(matrix.T @ matrix - np.eye(3)).max() < 1e-12
    assert abs(np.linalg.det(matrix) - 1.0) < 1e-12


@given(vectors)
def test_rrp_matrix_is_the_cayley_map(alpha):
    # R(α) = (I − S(α)/2)⁻¹ (I + S(α)/2)
    s = skew(alpha)
    expected = np.linalg.solve(np.eye(3) - 0.5 * s, np.eye(3) + 0.5 * s)
    assert np.abs(rot.rrp_matrix(alpha) - expected).max() < 1e-10


@given(st.lists(st.floats(-5, 5), min_size=3, max_size=3).map(np.array),
       st.lists(st.floats(-5, 5), min_size=3, max_size=3).map(np.array))
def test_composition_is_alpha1_then_alpha2(alpha1, alpha2):
    if abs(4.0 - alpha1 @ alpha2) < 1e-2:  # composition through a half turn: no RRP vector
        return
    composed = rot.rrp_compose(alpha1, alpha2)
    expected = rot.rrp_matrix(alpha2) @ rot.rrp_matrix(alpha1)
    assert np.abs(rot.rrp_matrix(composed) - expected).max() < 1e-10


@given(vectors)
def test_inverse(alpha):
    assert np.abs(rot.rrp_compose(alpha, rot.rrp_inverse(alpha))).max() < 1e-10 * (1 + np.linalg.norm(alpha))
    assert np.abs(rot.rrp_matrix(rot.rrp_inverse(alpha)) - rot.rrp_matrix(alpha).T).max() < 1e-12


@given(rotvecs)
def test_round_trips_vector_quaternion_matrix(theta):
    q = rot.quat_from_rotvec(theta)
    assert abs(np.linalg.norm(q) - 1) < 1e-14
    assert np.abs(rot.rotvec_from_quat(q) - theta).max() < 1e-10
    matrix = rot.quat_matrix(q)
    assert np.abs(matrix - Rotation.from_rotvec(theta).as_matrix()).max() < 1e-12
    assert np.abs(rot.matrix_quat(matrix) - q).max() < 1e-10
    alpha = rot.rrp_from_rotvec(theta)
    assert np.abs(rot.rotvec_from_rrp(alpha) - theta).max() < 1e-10
    assert np.abs(rot.rrp_matrix(alpha) - matrix).max() < 1e-10
    assert np.abs(rot.quat_from_rrp(alpha) - q).max() < 1e-10
    assert np.abs(rot.rrp_from_quat(q) - alpha).max() < 1e-9 * (1 + np.linalg.norm(alpha))


@given(quaternions, quaternions)
def test_quaternion_product_is_matrix_product(p, q):
    assert np.abs(rot.quat_matrix(rot.quat_multiply(p, q)) - rot.quat_matrix(p) @ rot.quat_matrix(q)).max() < 1e-12


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # scipy logm near a half turn
@settings(max_examples=50)  # (about 50 ms an example, most of it scipy's logm)
@given(quaternions, rotvecs)
def test_relative_rotation_vector_equals_matrix_logarithm(q_i, theta):
    # q_j = exp(θ) q_i, so that R_j R_iᵀ = exp(S(θ)), with |θ| up to π − 1e-4
    q_j = rot.quat_multiply(rot.quat_from_rotvec(theta), q_i)
    relative = rot.relative_rotvec(q_i, q_j)
    log = np.real(logm(rot.quat_matrix(q_j) @ rot.quat_matrix(q_i).T))
    from_log = np.array([log[2, 1], log[0, 2], log[1, 0]])
    assert np.abs(relative - from_log).max() < 1e-10
    assert np.abs(relative - theta).max() < 1e-10


def test_increment_is_rrp_composition():
    alpha = np.array([0.3, -1.2, 0.5])
    dalpha = np.array([0.01, 0.02, -0.03])
    q = rot.quat_from_rrp(alpha)
    q_next = np.asarray(rot.quat_apply_increment_one(q, dalpha))
    assert np.abs(q_next - rot.quat_from_rrp(rot.rrp_compose(alpha, dalpha))).max() < 1e-14


@pytest.mark.parametrize("angle", [np.pi - 1e-9, np.pi, 3.0 * np.pi])
def test_quaternion_storage_has_no_singularity_at_pi(angle):
    q = rot.quat_from_rotvec(np.array([0.0, 0.0, angle]))
    matrix = rot.quat_matrix(q)
    assert np.abs(matrix - Rotation.from_rotvec([0, 0, angle]).as_matrix()).max() < 1e-12
