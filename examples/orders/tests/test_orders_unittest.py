"""Without pytest fixtures: unittest and minibroker.testing.broker(), one broker for the class."""

import unittest

from orders import committed_orders, publish_orders

import minibroker.testing


class OrdersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._broker = minibroker.testing.broker(num_partitions=2)
        cls.bootstrap = cls._broker.__enter__().bootstrap_servers
        cls.addClassCleanup(cls._broker.__exit__, None, None, None)

    def test_roundtrip(self):
        publish_orders(self.bootstrap, "unittest-orders", [{"id": "u1", "qty": 7}], transactional_id="ut")
        self.assertEqual(
            committed_orders(self.bootstrap, "unittest-orders", expected=1), [{"id": "u1", "qty": 7}]
        )


if __name__ == "__main__":
    unittest.main()
