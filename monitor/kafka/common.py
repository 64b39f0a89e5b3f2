"""What lagmon's three Kafka clients share: librdkafka's failures as lagmon's named errors, its log lines kept quiet.

Errors are told apart by librdkafka's code, never by its wording (docs/architecture.md section 2).
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError

from monitor.models import KafkaUnavailable, NotAuthorized

OFFSETS_TOPIC = "__consumer_offsets"

_NOT_AUTHORIZED = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    }
)


def compute_kafka_error(err: KafkaError, message: str) -> KafkaUnavailable:
    """NotAuthorized for a missing ACL, else KafkaUnavailable: decided on librdkafka's code, never on its wording."""
    return (NotAuthorized if err.code() in _NOT_AUTHORIZED else KafkaUnavailable)(message)


def quiet_logger() -> logging.Logger:
    """librdkafka's own log lines: dropped unless someone enables `lagmon.librdkafka` logging.

    Failures reach the user once, as our own one-line errors, instead of a line per retry.
    """
    logger = logging.getLogger("lagmon.librdkafka")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
    return logger
