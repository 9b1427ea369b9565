import numpy as np
import pytest

import peat


@pytest.fixture
def session():
    with peat.Session(seed=7, run_name="pytest") as s:
        yield s


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
