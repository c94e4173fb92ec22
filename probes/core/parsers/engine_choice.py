"""Which process is "the engine": one rule for the python probe and the engine readers (issue 29)."""

# Any local user can start a process whose command line looks like an engine API server, and /proc order puts
# it before the real one as often as not. A look-alike must never be judged, read or fetched in its place:
#
# * under a root audit (the audit's euid 0: root on the host, or the container's root in a container audit) a
#   root-owned candidate beats every other owner's: no user can start a process owned by root;
# * candidates left of several owners (or, where the caller keys them so, of several ports) are ambiguous:
#   the caller says unknown and names them, it never picks one silently;
# * one owner left is one engine (the API server and its forked copies): the first in listing order speaks.
#
# An owner that could not be read (None: an older recording, a process gone before its status was read) is an
# owner of its own and never counts as root; a listing where no owner was read behaves as before (the first).
# A listing cut short (`cut`: more matches than the listing prints) under a root audit that saw no root-owned
# candidate is ambiguous too: the root engine may be past the cut, behind a user's planted look-alikes.
#
# This text is embedded (comment lines and one-line docstrings dropped) into the isolated python3 -I -S -B
# readers that run on targets (pyenv_reader.py, engine_metrics.py): stdlib only, no imports at all, and it
# must pass the read-only lint (no greater-than sign, no ampersand, no single quote): types are type comments.


def choose_engine(found, audit_uid, cut=False):
    # type: (list[tuple[int, int | None, str]], int | None, bool) -> tuple[list[tuple[int, int | None, str]], list[tuple[int, int | None, str]]]
    """Candidates (pid, owner uid or None, key) in listing order -> (the engine, ambiguous candidates)."""
    kept = list(found)
    rooted = audit_uid == 0 and any(f[1] == 0 for f in kept)
    if rooted:
        kept = [f for f in kept if f[1] == 0]
    groups: list[tuple[int | None, str]] = []
    for f in kept:
        if (f[1], f[2]) not in groups:
            groups.append((f[1], f[2]))
    if len(groups) == 1 and (rooted or not cut or audit_uid != 0):
        return kept, []
    return [], kept
