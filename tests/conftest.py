"""Shared fixtures: isolated index cache, sample workspaces, the requests/flask sdists, the fake LLM."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs
import pytest

from tests.sdist import fetch_sdist as _fetch

pytest_plugins = ["tests.conftest_llm"]

#: Where fetched PyPI source distributions are cached across runs (CI sets it to a job folder).
SDIST_CACHE = Path(os.environ.get("CODEASK_TEST_SDISTS", Path.home() / ".cache" / "codeask-test-sdists"))

#: The user's real index cache (read before any test's monkeypatch) and what it held when the run began.
_REAL_CACHE = Path(platformdirs.user_cache_dir("codeask", appauthor=False)) / "indexes"
_REAL_BEFORE = frozenset(os.listdir(_REAL_CACHE)) if _REAL_CACHE.is_dir() else frozenset()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run when an index appeared in the user's real cache while it ran: a fixture of a wider
    scope than :func:`isolated_env` runs without it (a module-scoped ``codeask index`` wrote
    ``~/.cache/codeask/indexes/shop-*`` on every run). A codeask run of the user's own at the same
    time trips it too; the message names the folders."""
    now = frozenset(os.listdir(_REAL_CACHE)) if _REAL_CACHE.is_dir() else frozenset()
    if now - _REAL_BEFORE:
        print(f"\ntests wrote to the user's real cache {_REAL_CACHE}: {', '.join(sorted(now - _REAL_BEFORE))}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_LLM_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "CODEASK_LLM",
    "CODEASK_MODEL",
)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory, monkeypatch):
    """Every test gets its own index cache dir, an empty user config dir (never the real
    ``codeask.toml``) and no LLM keys from the developer's shell.

    The XDG base dirs point into the test's temp dir too, so code that loads settings with an
    explicit empty environment (``env={}``: no ``CODEASK_CACHE_DIR``) still never writes to the
    user's real cache (platformdirs reads ``XDG_CACHE_HOME`` at call time)."""
    cache = tmp_path_factory.mktemp("codeask-cache")
    xdg = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(xdg / "data"))
    monkeypatch.setenv("CODEASK_CACHE_DIR", str(cache))
    monkeypatch.setenv("CODEASK_CONFIG_DIR", str(tmp_path_factory.mktemp("codeask-config")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in _LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    return cache


@pytest.fixture
def user_config(isolated_env) -> Path:
    """This test's trusted user config file (``$CODEASK_CONFIG_DIR/codeask.toml``), not yet written."""
    return Path(os.environ["CODEASK_CONFIG_DIR"]) / "codeask.toml"


def fetch_sdist(pin: str) -> Path:
    """The unpacked sdist ``pin`` from the test cache (read-only: copy before editing)."""
    return _fetch(pin, SDIST_CACHE)


@pytest.fixture(scope="session")
def requests_sdist() -> Path:
    """The unpacked requests 2.34.2 sdist (read-only: copy before editing)."""
    return fetch_sdist("requests==2.34.2")


@pytest.fixture(scope="session")
def flask_sdist() -> Path:
    """The unpacked flask 3.1.3 sdist (read-only: copy before editing)."""
    return fetch_sdist("flask==3.1.3")


SAMPLE = {
    "src/shop/cart.py": '''"""Shopping cart."""

from shop.pricing import apply_discount


class Cart:
    """Items a customer is about to buy."""

    def __init__(self):
        self.items = []

    def add_item(self, name, price, quantity=1):
        """Add ``quantity`` units of an item."""
        self.items.append((name, price, quantity))

    def total(self, coupon=None):
        """Sum of prices, with the coupon's discount applied."""
        subtotal = sum(price * quantity for _, price, quantity in self.items)
        return apply_discount(subtotal, coupon)
''',
    "src/shop/pricing.py": '''"""Prices and discounts."""

COUPONS = {"SAVE10": 0.10, "HALF": 0.50}


def apply_discount(amount, coupon):
    """Reduce ``amount`` by the coupon's percentage; unknown coupons change nothing."""
    rate = COUPONS.get(coupon, 0.0)
    return round(amount * (1 - rate), 2)
''',
    "src/shop/shipping.py": '''"""Shipping costs."""


def shipping_cost(weight_kg, express=False):
    """Flat fee plus a per-kilogram rate; express doubles it."""
    cost = 4.99 + 1.25 * weight_kg
    return cost * 2 if express else cost
''',
    "README.md": "# Shop\n\nA tiny shop used by the codeask tests.\n\n## Discounts\n\nCoupons reduce the cart total.\n",
}


@pytest.fixture
def sample_workspace(tmp_path) -> Path:
    """A small Python project (cart, pricing, shipping, README) in a temp folder."""
    root = tmp_path / "shop"
    for rel, text in SAMPLE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
