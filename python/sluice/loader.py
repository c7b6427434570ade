"""sluice.Loader: the C++ loader as a Python iterable of zero-copy batches (docs/python.md)."""
import json
import operator
import os
import sys

from . import _sluice

# Batches the consumer may hold at once before the loader must restart to keep them (the C++
# default is 1, for a consumer that drops each batch before asking for the next; a Python loop
# still holds the previous batch while it asks: see Loader's docstring).
DEFAULT_CONSUMER_BATCHES = 4


def default_rank_world():
    """(rank, world): torch.distributed's when it is initialised, else the launcher's variables.

    The variables are read as sluice-train reads them (comm/launch_env.h): RANK/WORLD_SIZE
    (torchrun), OMPI_COMM_WORLD_RANK/SIZE (mpirun), PMI_RANK/SIZE (MPICH), SLURM_PROCID/NTASKS
    (srun); none of them: rank 0 of 1.
    """
    dist = sys.modules.get("torch.distributed")  # never imports torch itself
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    rank, world, _ = _sluice.launch_env()
    return rank, world


# The launchers' count of ranks on this node, in the order comm/launch_env.h reads the ranks:
# torchrun, Open MPI, MPICH/Hydra, Slurm (set with --ntasks-per-node).
LOCAL_WORLD_VARIABLES = ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                         "SLURM_NTASKS_PER_NODE")


def default_threads():
    """Decode threads of a Loader given no ``threads``: this process's usable cores (affinity
    mask and cgroup quota) shared by the ranks of its node, at least 1.

    The ranks a launcher starts on one node (torchrun --nproc-per-node N) each see every core;
    each taking all of them would run N times as many threads as cores. The node's rank count is
    the first of LOCAL_WORLD_SIZE (torchrun), OMPI_COMM_WORLD_LOCAL_SIZE (mpirun),
    MPI_LOCALNRANKS (MPICH) and SLURM_NTASKS_PER_NODE (srun) that is set; none: 1, all the cores.
    """
    local = 1
    for name in LOCAL_WORLD_VARIABLES:
        value = os.environ.get(name)
        if value is None:
            continue
        try:
            local = int(value)
        except ValueError:
            local = 0
        if local < 1:
            raise ValueError(f"{name}={value!r}: expected the number of ranks on this node, an "
                             "int >= 1. HINT: pass threads= to sluice.Loader to choose them")
        break
    return max(1, _sluice.usable_cores() // local)


def _sources(path):
    """[(location, weight)] from a path or URL, a {path: weight} dict or (path, weight) pairs."""
    if isinstance(path, (str, os.PathLike)):
        return [(os.fspath(path), 1.0)]
    if isinstance(path, dict):
        pairs = list(path.items())
    elif isinstance(path, (list, tuple)):
        pairs = list(path)
    else:
        raise TypeError("path: expected str, os.PathLike, a {path: weight} dict or a list of "
                        f"(path, weight) pairs, got {type(path).__name__}")
    if not pairs:
        raise ValueError("path: an empty mixture")
    out = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            # The pair may hold a URL with a password: shown redacted, like every location.
            raise TypeError(f"path[{i}]: expected a (path, weight) pair, got "
                            f"{_sluice.redact_url(repr(pair))}")
        where, weight = pair
        if not isinstance(where, (str, os.PathLike)):
            raise TypeError(f"path[{i}]: expected str or os.PathLike, got {type(where).__name__}")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise TypeError(f"path[{i}] weight: expected a number, got {type(weight).__name__}")
        out.append((os.fspath(where), float(weight)))
    return out


def _plain_state(value, path="state"):
    """``value`` with JSON's types only, for ResumeState's JSON: a count that came back from a
    checkpoint as a numpy integer or a 0-d tensor (np.savez, torch.save) becomes an int; any other
    object is a TypeError naming its field, as the C++ checks name theirs."""
    if isinstance(value, dict):
        return {k: _plain_state(v, f"{path}[{k!r}]") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_state(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{path}: expected an int, got {type(value).__name__}") from None


def _pin_hooks():
    """(register, unregister) for pinned host memory, or None without CUDA."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    cudart = torch.cuda.cudart()

    def register(address, nbytes):
        err = cudart.cudaHostRegister(address, nbytes, 0)
        if int(err) != 0:
            raise RuntimeError(f"cudaHostRegister({nbytes} bytes) failed: error {int(err)}")

    def unregister(address):
        cudart.cudaHostUnregister(address)

    return register, unregister


class Loader:
    """Batches of a shardify dataset for one rank, computed by C++ threads, handed out zero-copy.

    ``Loader(path, *, seed, rank=None, world=None, mix_records=0, **options)``. ``path`` is a
    dataset directory or URL (``https://...``, ``s3://bucket/prefix``: docs/remote.md), or a
    weighted mixture: ``{"a": 3, "b": 1}`` or ``[("a", 3), ("b", 1)]`` (docs/loader.md, "Weighted
    mixing"; ``mix_records`` records per epoch, 0 = the sources' sum). Options are the command line's
    loader and feature flags (sluice-bench epoch --help, sluice-train --help) without their
    dashes, '-' as '_': ``features="fbank"``, ``num_mel_bins=80``, ``max_frames=20000``,
    ``dtype="bf16"``, ``threads=4``, ``spec_augment=True``, ``cmvn="mean-var"``, ... and
    ``shuffle``. ``sluice.loader_keywords()`` lists them all. A misspelled keyword raises
    TypeError with the close ones; a keyword that does not apply to the dataset (``batch_size``,
    packing's, on audio: ``max_batch_size``) raises InvalidArgumentError naming the one that
    does. ``threads`` defaults to default_threads(): the usable cores shared by the node's
    ranks (LOCAL_WORLD_SIZE under torchrun). rank and world default to torch.distributed's
    when it is initialised, else to the launcher's environment variables.

    Iterating yields sluice.Batch objects for epoch ``set_epoch(e)`` (default 0), the same on
    every iteration until set_epoch changes it (as torch's DistributedSampler). Their arrays
    export through DLPack without a copy (``torch.from_dlpack(batch.features)``) and stay valid
    and unchanged while the batch or any tensor made from them lives. The loader keeps
    ``consumer_batches`` (default 4) batches out of its pool for the consumer; if the consumer
    still holds a batch the loader would reuse, the loader restarts its pipeline at the same
    position instead (``stats()["restarts"]`` counts it), so a batch kept for long costs a
    restart and its memory, never wrong data.

    With CUDA available (torch imported and torch.cuda.is_available()) the batch memory is
    registered as pinned (``pin_memory=None`` decides so; True/False forces), so
    ``tensor.to("cuda", non_blocking=True)`` is an asynchronous copy.

    ``state_dict()`` / ``load_state_dict()`` save and restore the C++ ResumeState whole,
    ``{"epoch": E, "batches": N, "world": W}`` (plus ``"earlier"`` after a change of world size):
    at the same world size the next iteration resumes at batch N of epoch E exactly (nothing
    before it is read); at another world size it yields this rank's share of the records the W
    ranks had not taken, each exactly once over the new ranks (docs/loader.md, "Elastic resume").
    """

    def __init__(self, path, *, seed, rank=None, world=None, digest=False, pin_memory=None,
                 mix_records=0, **options):
        sources = _sources(path)
        if isinstance(mix_records, bool) or not isinstance(mix_records, int) or mix_records < 0:
            raise ValueError(f"mix_records={mix_records!r}: expected an int >= 0")
        if (rank is None) != (world is None):
            raise ValueError("rank and world: give both or neither")
        if rank is None:
            rank, world = default_rank_world()
        options.setdefault("consumer_batches", DEFAULT_CONSUMER_BATCHES)
        threads = options.get("threads", 0)
        if type(threads) is int and threads == 0:  # a wrong type is the table's TypeError
            options["threads"] = default_threads()
        options.update(seed=seed, rank=rank, world=world)
        if pin_memory is None:
            hooks = _pin_hooks()
        elif pin_memory is True:
            hooks = _pin_hooks()
            if hooks is None:
                raise ValueError("pin_memory=True: CUDA is not available (torch.cuda)")
        elif pin_memory is False:
            hooks = None
        else:  # (register, unregister) callables: tests and other runtimes
            hooks = tuple(pin_memory)
        self._hooks = hooks
        self._core = _sluice.Loader(sources, mix_records, options, bool(digest),
                                    hooks is not None)
        self._path = sources[0][0] if len(sources) == 1 else dict(sources)
        self.rank, self.world = rank, world
        self._epoch = 0
        self._resume = None  # JSON of the whole state the next iteration of self._epoch starts at

    # --- epochs and resume ---------------------------------------------------------------
    @property
    def epoch(self):
        return self._epoch

    def set_epoch(self, epoch):
        """The epoch the next iteration yields (keys the shuffle with the seed)."""
        if isinstance(epoch, bool) or not isinstance(epoch, int):
            raise TypeError(f"epoch: expected int, got {type(epoch).__name__}")
        if epoch < 0:
            raise ValueError(f"epoch={epoch}: must be >= 0")
        if epoch != self._epoch:
            self._resume = None
        self._epoch = epoch

    def state_dict(self):
        """The C++ ResumeState as a dict: ``{"epoch": E, "batches": N, "world": W}``, N batches of
        epoch E handed out on each of W ranks, and ``"earlier"`` stretches of E at other world
        sizes after an elastic resume. Pass it whole to load_state_dict."""
        if self._resume is not None:
            return json.loads(self._resume)
        state = json.loads(self._core.state_json())
        if state["epoch"] != self._epoch:  # set_epoch since the last iteration
            return {"epoch": self._epoch, "batches": 0, "world": self.world}
        return state

    def load_state_dict(self, state):
        """The next iteration continues where ``state`` (a state_dict(), from any world size)
        stopped: at the same world size at its batch exactly, at another with the rest of its
        epoch. A state that took batches must say at which world size (``"world"``): without it,
        a resume at another size would lose or repeat records, so it is refused."""
        if not isinstance(state, dict):
            raise TypeError(f"state: expected dict, got {type(state).__name__}")
        text = _sluice.check_resume_state(json.dumps(_plain_state(state)))
        checked = json.loads(text)
        if "world" not in checked and (checked["batches"] > 0 or "earlier" in checked):
            raise ValueError(
                f"state_dict {state!r} has no \"world\": the number of ranks that took its "
                f"{checked['batches']} batches is needed to resume them (at world={self.world} "
                "or any other size) without losing or repeating records. HINT: add "
                "\"world\": W, the world size of the run that saved it")
        self._epoch, self._resume = checked["epoch"], text

    def __len__(self):
        """Batches of this rank in the current epoch (the same on every rank)."""
        return self._core.count_batches(self._epoch)

    # --- iteration -------------------------------------------------------------------------
    def __iter__(self):
        state, self._resume = self._resume, None
        self._core.start(state or json.dumps({"epoch": self._epoch, "batches": 0}))
        self._drain_pins()
        while True:
            batch = self._core.next()
            if self._hooks is not None:
                self._drain_pins()
            if batch is None:
                return
            yield batch

    def _drain_pins(self):
        if self._hooks is None:
            return
        register, unregister = self._hooks
        for address, nbytes in self._core.take_new_blocks():
            register(address, nbytes)
        for address, _ in self._core.take_dead_blocks():
            unregister(address)
            self._core.free_dead_block(address)

    # --- what the batches are ---------------------------------------------------------------
    @property
    def feature_info(self):
        """{audio, kind, dim, sample_rate, frame_shift_seconds, dtype, audio_turns} (audio_turns:
        a conversation dataset whose batches carry audio turns, computed as kind and dim say)."""
        return self._core.feature_info()

    def max_batch_shape(self):
        """{rows, frames, padded_frames, tokens, audio, audio_frames, padded_audio_frames} of the
        started epoch's largest batch (C++ BatchShape; the audio keys: conversation datasets'
        audio turns, 0 otherwise)."""
        return self._core.max_batch_shape()

    def stats(self):
        """The started epoch's EpochStats (loader/stats.h) plus "restarts"."""
        return self._core.stats()

    def digest(self):
        """Hex digest of every batch yielded since the iteration began (needs digest=True): the
        same as sluice-bench epoch --json "digest" for a whole epoch."""
        return self._core.digest()

    def close(self):
        """Stops the pipeline; batches and tensors handed out stay valid."""
        self._core.close()
        if os.getpid() == self._core.owner_pid:  # a forked child's copy has no pins to drain
            self._drain_pins()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        # A URL's password stays out of logs and tracebacks (storage/url.h RedactUrl).
        if isinstance(self._path, dict):
            path = {_sluice.redact_url(p): w for p, w in self._path.items()}
        else:
            path = _sluice.redact_url(self._path)
        return (f"sluice.Loader({path!r}, epoch={self._epoch}, rank={self.rank}, "
                f"world={self.world})")
