"""The worker's minibatch plumbing: batches in epoch order and rows gathered into a scratch buffer."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from netsim.sim.worker import BatchSampler, RowGather


def test_batches_walk_fresh_permutations_epoch_by_epoch():
    shard = np.arange(100, 110)  # 10 rows, batch 4: two batches per epoch, 2 rows left over
    sampler = BatchSampler(shard, 4, np.random.default_rng(3))
    reference = np.random.default_rng(3)
    want = []
    for _ in range(3):
        order = shard[reference.permutation(10)]
        want += [order[0:4], order[4:8]]
    got = [sampler.next() for _ in range(6)]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_peek_returns_the_next_batch_without_consuming_it():
    sampler = BatchSampler(np.arange(7), 3, np.random.default_rng(0))
    for _ in range(5):
        ahead = sampler.peek().copy()
        np.testing.assert_array_equal(sampler.next(), ahead)


def test_gather_equals_fancy_indexing_and_reuses_one_buffer_per_size():
    X = np.arange(60.0).reshape(12, 5)
    gather = RowGather(X)
    a = gather(np.array([3, 0, 11]))
    np.testing.assert_array_equal(a, X[[3, 0, 11]])
    b = gather(np.array([1, 2, 4]))
    assert b is a  # the same scratch buffer, overwritten
    np.testing.assert_array_equal(b, [[5, 6, 7, 8, 9], [10, 11, 12, 13, 14], [20, 21, 22, 23, 24]])
    c = gather(np.array([7, 8]))
    assert c is not a and c.shape == (2, 5)


def test_gather_of_a_sparse_matrix_indexes_it():
    X = sp.csr_matrix(np.eye(4))
    rows = RowGather(X)(np.array([2, 0]))
    assert sp.issparse(rows)
    np.testing.assert_array_equal(rows.toarray(), [[0, 0, 1, 0], [1, 0, 0, 0]])
