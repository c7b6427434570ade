"""Exceptions raised by sluice: the C++ Status codes, each also a builtin a caller already catches.

The message is the C++ one as is: it names the file, the shard, block and byte offset, and any
HINT saying what to do.
"""


class Error(Exception):
    """Base of every error the C++ core reports."""


class NotFoundError(Error, FileNotFoundError):
    """A dataset, shard or file is missing."""


class CorruptionError(Error):
    """Data failed a checksum or does not parse; the message names shard and offset."""


class InvalidArgumentError(Error, ValueError):
    """An option does not fit the dataset (e.g. token ids asked of a dataset without them)."""


class IOError(Error, OSError):  # noqa: A001 - the C++ code's name, also an OSError
    """Reading or writing failed."""


class UnsupportedError(Error, ValueError):
    """The dataset or the options ask for something this build cannot do."""


class ShardifyError(Error):
    """The shardify command failed; the message is its error output."""
