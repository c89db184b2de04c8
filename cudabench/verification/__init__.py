"""Verification (the tuning layer's sibling): find, for one variant of an op, the smallest
shape where it is wrong (FAIL, CRASH, TIMEOUT, ERROR), before anyone times it.

    domain.py   the shapes a variant may be checked at (its op's dims and ranks, its header's
                `requires:`, the card's memory) and the edge shapes that break kernels most
                often, derived from those declarations and the variant's launches
    search.py   the search: the edge shapes smallest first, then a randomized search
                (Hypothesis draws and shrinks), then shrinking to a shape no larger than
                twice the smallest failing one, all within a time budget

Nothing here runs a kernel or prints: the search asks an oracle (a function from shapes to
probes) and the use case (usecases/verify.py) answers it with check-only jobs on a sweep.
GPU-free, and tested with an oracle that is a plain predicate.
"""
