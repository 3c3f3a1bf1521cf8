"""What a pipeline into a sink shows about a discrepancy: a Kafka Connect sink's offsets, its
dead letter queue, its tasks and their restarts, an Iceberg table's snapshots."""
