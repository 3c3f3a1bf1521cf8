"""A real local Apache Kafka cluster (KRaft) for trying kaudit and for experiments."""
