"""Tiling with the identity instructions slice^H and concat^H (seed 000 §5.2.3): Act's
completeness fallback when the e-graph has no pii graph (docs/compiler.md, the "phase 1: tiling" row).

The package, one job per module:

- :mod:`.views`: byte views (:class:`View`, :class:`Views`, :func:`view_of`, :data:`DC`);
- :mod:`.forms`: a kernel value's other forms in the saturated e-graph (:class:`Forms`);
- :mod:`.matching`: an instruction pattern against a demanded view (:class:`Matcher`, :func:`match`);
- :mod:`.tops`: instruction tops and the per-target tables (:class:`~.tops.TargetTiling`);
- :mod:`.prune`: the necessary conditions that keep α and values from being tried;
- :mod:`.moved`: results of moved demands;
- :mod:`.search`: the branch and bound and the pii graph it builds (:class:`Tiler`).
"""

from .forms import Forms
from .matching import Matcher, match
from .search import Tiler
from .views import DC, View, Views, view_of

__all__ = ["DC", "View", "Views", "view_of", "match", "Matcher", "Forms", "Tiler"]
