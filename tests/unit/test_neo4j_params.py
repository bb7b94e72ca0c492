"""How vectors reach the Neo4j driver: as lists it packs (in Rust) without kgdb or the driver
walking them in Python. The driver renders every parameter into its debug log before sending
it, whether that log is on or not, so a vector's repr must not be its 384 floats (that repr
held Neo4j loads at about 1,100 entities/s)."""

from __future__ import annotations

import numpy as np
from neo4j._codec.packstream.v1 import Packer

from kgdb.engine.neo4j import _param


class _Buffer:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, b: bytes) -> None:
        self.data += b


def packed(value: object) -> bytes:
    buffer = _Buffer()
    Packer(buffer).pack(value)  # the driver's packer (in Rust with neo4j-rust-ext)
    return bytes(buffer.data)


def test_vectors_pack_as_lists_and_show_by_size() -> None:
    vector = np.linspace(-1, 1, 384, dtype=np.float32)
    matrix = np.stack([vector, -vector])
    params = _param({"rows": [{"id": "a", "embedding": vector}], "vectors": matrix,
                     "ids": np.array([1, 2])})
    one = params["rows"][0]["embedding"]
    assert repr(one) == "<384-d vector>" and repr(params["vectors"]) == (
        "[<384-d vector>, <384-d vector>]")
    assert params["ids"] == [1, 2]
    # what goes over the wire is exactly the list of the float32 values, as doubles
    assert packed(one) == packed([float(x) for x in vector])
    assert packed(params["vectors"]) == packed([[float(x) for x in row] for row in matrix])
    assert len(repr(params)) < 200
