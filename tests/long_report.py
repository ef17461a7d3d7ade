"""A real-shaped long bug report and the small project it is about (tests and ``bench/long_question.py``).

The project is a shop: ``shop/orders.py`` calls ``Cart.total`` (``shop/cart.py``), which calls
``apply_discount`` (``shop/pricing.py``), which raises ``ValueError: coupon 'SPRING24' has expired``.
Its other modules (inventory, shipping, payments) use the words the log is full of. The report is what
users paste: a title and prose, the traceback, then the server log of the morning, thousands of lines
(reservations, shipping quotes, payment retries, a repeated warning, a second traceback with a
recursion) in which the exception appears once more near the end.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["write_shop", "report", "ERROR_LINE"]

ERROR_LINE = "ValueError: coupon 'SPRING24' has expired"

FILES = {
    "shop/__init__.py": "",
    "shop/pricing.py": '''"""Prices, discounts and coupons."""

from datetime import date


def apply_discount(amount, coupon):
    """The amount after ``coupon`` (None: no coupon); an expired coupon is refused."""
    if coupon is not None and coupon.expires < date.today():
        raise ValueError(f"coupon {coupon.code!r} has expired")
    if coupon is None:
        return amount
    return round(amount * (1 - coupon.percent / 100), 2)
''',
    "shop/cart.py": '''"""The shopping cart: items, quantities and the total."""

from shop.pricing import apply_discount


class Cart:
    def __init__(self):
        self.items = []

    def total(self, coupon=None):
        subtotal = sum(price * quantity for _, price, quantity in self.items)
        return apply_discount(subtotal, coupon)
''',
    "shop/orders.py": '''"""Placing an order: the cart's total, the payment, the shipment."""

from shop.payments import charge
from shop.shipping import book_shipment


def place_order(cart, customer, coupon=None):
    """Charge the customer for the cart and book its shipment; returns the order id."""
    if not cart.items:
        raise ValueError("the cart is empty")
    order_id = customer.next_order_id()
    customer.log(order_id)
    total = cart.total(coupon)
    charge(customer.card, total)
    return book_shipment(order_id, customer.address)
''',
    "shop/inventory.py": '''"""Stock reservations per warehouse and sku."""


def reserve_stock(warehouse, sku, quantity):
    """Reserve ``quantity`` of ``sku`` in ``warehouse``; refused when the warehouse stock is short."""
    stock = warehouse.stock.get(sku, 0)
    if stock < quantity:
        raise LookupError(f"warehouse {warehouse.name} is short of sku {sku}")
    warehouse.stock[sku] = stock - quantity
    return warehouse.reservation(sku, quantity)


def release_stock(warehouse, reservation):
    """Give a reservation's stock back to its warehouse (an order cancelled or expired)."""
    warehouse.stock[reservation.sku] += reservation.quantity
''',
    "shop/shipping.py": '''"""Shipping quotes and shipments: carriers, parcels, weights, delivery zones."""


def shipping_quote(weight_kg, zone, express=False):
    """The carrier's price for a parcel of ``weight_kg`` to ``zone``."""
    rate = 4.5 if zone == "domestic" else 11.0
    return round(rate + weight_kg * (2.0 if express else 1.2), 2)


def book_shipment(order_id, address):
    """Book a carrier pickup for the order's parcel; returns the tracking number."""
    return f"TRK-{order_id}-{address.postcode}"
''',
    "shop/payments.py": '''"""Card payments through the payment gateway, with retries."""


def charge(card, amount, retries=3):
    """Charge ``amount`` to ``card``, retrying a gateway timeout up to ``retries`` times."""
    for attempt in range(retries):
        if card.gateway.charge(card.token, amount):
            return True
    raise TimeoutError("payment gateway timed out")
''',
}

_PROSE = """Checkout crashes when a customer applies an expired coupon

When a customer applies the coupon SPRING24 at checkout, the order page fails with a 500 error
instead of telling them that the coupon has expired. It started after we upgraded to 2.3; with 2.2
the page showed "coupon expired" and the customer could pay without it. Steps: add any item to the
cart, apply SPRING24 (it expired on 2024-02-29), press "Place order".

Expected: a message that the coupon has expired, and the order placed without the discount.
Actual: the traceback below, and nothing is charged.

Traceback (most recent call last):
  File "/srv/app/shop/orders.py", line 13, in place_order
    total = cart.total(coupon)
  File "/srv/app/shop/cart.py", line 12, in total
    return apply_discount(subtotal, coupon)
  File "/srv/app/shop/pricing.py", line 9, in apply_discount
    raise ValueError(f"coupon {coupon.code!r} has expired")
ValueError: coupon 'SPRING24' has expired

The full server log of that morning is below, in case it helps.

"""

_LOG_TEMPLATES = (
    "INFO shop.inventory reserved stock sku={n} quantity={q} warehouse=north-{w} reservation={n}{q}",
    "INFO shop.shipping shipping quote weight_kg={q}.{w} zone=europe carrier=parcelnet price={n}.{q}",
    "DEBUG shop.payments payment gateway handshake card=****{n} attempt={q} latency_ms={w}{q}",
    "INFO shop.inventory released stock sku={n} warehouse=south-{w} reservation expired after {q} minutes",
    "WARNING shop.shipping carrier parcelnet slow to answer, retrying in {q} s (delivery zone {w})",
    "INFO shop.orders order {n} placed total={q}.{w} items={q} warehouse=north-{w}",
    "DEBUG shop.shipping parcel label printed for tracking TRK-{n}-{w}{q}",
    "INFO shop.payments payment captured amount={n}.{q} currency=EUR gateway=stripe-{w}",
)


def _log_lines(chars: int) -> list[str]:
    """About ``chars`` characters of server log: timestamped lines, most of them from the templates
    above, a repeated warning, a recursion traceback, and the coupon error again near the end."""
    lines: list[str] = []
    size = i = 0
    while size < chars:
        stamp = f"2024-03-02 09:{(i // 60) % 60:02d}:{i % 60:02d},{i % 1000:03d}"
        body = _LOG_TEMPLATES[i % len(_LOG_TEMPLATES)].format(n=1000 + i * 7, q=i % 9 + 1, w=i % 5)
        line = f"{stamp} {body}"
        if i % 97 == 50:
            line = f"{stamp} WARNING shop.inventory warehouse north-1 stock sync lagging behind by {i % 13} s"
        if i == 120:
            lines += [
                f"{stamp} ERROR shop.shipping zone lookup failed",
                "Traceback (most recent call last):",
                *['  File "/srv/app/shop/shipping.py", line 6, in shipping_quote\n    rate = zone_rate(zone)'] * 30,
                "RecursionError: maximum recursion depth exceeded",
            ]
        lines.append(line)
        size += len(line) + 1
        i += 1
    lines[-40:-40] = [f"2024-03-02 10:59:59,999 ERROR shop.orders checkout failed: {ERROR_LINE}"]
    return lines


def write_shop(root: Path) -> Path:
    """The shop project under ``root`` (created); returns ``root``."""
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def report(chars: int = 25_000) -> str:
    """The bug report, prose and traceback first, then the log, about ``chars`` characters long."""
    text = _PROSE + "\n".join(_log_lines(max(0, chars - len(_PROSE))))
    return text[:chars].rstrip()
