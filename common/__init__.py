"""What every layer may use: the clock and the fault points (Kafka's `Time` and `server-common`)."""
