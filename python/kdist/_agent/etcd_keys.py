"""Where one job of `--rendezvous etcd://` lives in etcd (`JobKeys`), and the mark an ended
job leaves there (`JobEnded`)."""

from __future__ import annotations

from dataclasses import dataclass

# How long the mark of an ended job stays in etcd: an agent of the job that had not read the
# end yet learns it there (instead of taking an empty book over), and `kdist status` reads the
# job's final state there; a later job with the same id ignores it (it was not admitted to the
# ended one).
ENDED_MARKER_SECONDS = 600


@dataclass(frozen=True)
class JobEnded:
    """The end of the job as the mark in etcd tells it (the holder's end word not read here):
    what `next` returns, read like the book's end word."""

    exit_status: int
    message: str
    kind: str = "end"
    attempt: int = -1
    first_failure: str = ""
    ended: str = ""


@dataclass(frozen=True)
class JobKeys:
    """Where one job lives in etcd: PREFIX/JOB_ID/...

    Example:
        >>> keys = JobKeys("kdist", "train-7")
        >>> keys.holder, keys.node("host-1"), keys.book
        ('kdist/train-7/live/holder', 'kdist/train-7/live/nodes/host-1', 'kdist/train-7/book')
    """

    prefix: str
    job_id: str

    @property
    def job(self) -> str:
        return f"{self.prefix}/{self.job_id}/"

    @property
    def live(self) -> str:
        """What the agents watch: the election key and every node's key."""
        return self.job + "live/"

    @property
    def holder(self) -> str:
        return self.live + "holder"

    @property
    def nodes(self) -> str:
        return self.live + "nodes/"

    def node(self, name: str) -> str:
        return self.nodes + name

    def lost(self, lease: int) -> str:
        """Where the agents that lost their connection to the holder under `lease` say so
        (one key each, under its own lease): when every other live node has, the holder's
        lease is revoked at once (kdist._agent.etcd_rendezvous's takeover the survivors
        agree on)."""
        return f"{self.live}lost/{lease:x}/"

    @property
    def book(self) -> str:
        return self.job + "book"

    @property
    def ended(self) -> str:
        """How the job ended, kept a while after its other keys went (ENDED_MARKER_SECONDS)."""
        return self.job + "ended"
