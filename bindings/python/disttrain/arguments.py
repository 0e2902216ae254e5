"""Argument spellings shared by the numpy and torch collectives.

The root of a broadcast is `root_rank=` everywhere, as in Horovod. The numpy functions
used to spell it `root=`; that spelling is still accepted, with a DeprecationWarning, so
scripts keep running while they are ported.
"""
import warnings

# Stands for "not passed", so that root_rank=0 given explicitly and root= can be told apart.
UNSET = object()


def root_rank_of(root_rank, root, where):
    """The root rank of a call to `where` given root_rank= and the deprecated root=.
    TypeError when both are given; DeprecationWarning when only root= is."""
    if root is UNSET:
        return 0 if root_rank is UNSET else root_rank
    if root_rank is not UNSET:
        raise TypeError(f"{where}() got both root_rank={root_rank!r} and root={root!r}; "
                        f"pass only root_rank= (root= is its deprecated spelling)")
    warnings.warn(f"{where}(root=...) is deprecated; spell it root_rank= (as Horovod does)",
                  DeprecationWarning, stacklevel=3)
    return root
