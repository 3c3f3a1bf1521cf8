"""kaudit: audit what an Apache Kafka cluster really delivers."""

__version__ = "0.1.0"
