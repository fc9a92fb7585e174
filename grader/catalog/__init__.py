"""The catalogue: exercise bundles and what the service publishes of them.

    bundle.py      the bundle format (a folder with exercise.toml): a leaf, below the engine
    template/      the annotated bundle `grader new SLUG` copies
    check.py       a bundle's own files must grade as they say (uses the engine)
    check_table.py the check's rows and their text form (without the engine)
    models.py      published exercises and uploaded bundles, as stored
    uploads.py     receiving an uploaded zip safely, unpacking it on a worker, publishing it
    publishing.py  publishing the catalogue folder (grader up, grader exercise sync)
    tasks.py       the check of an upload, on a worker
    push.py        sending a bundle to a running service's API and following its check

Importing this package gives the bundle format only; nothing here pulls in the engine.
"""

from grader.catalog.bundle import (SLUG, TEMPLATE_DIR, Bundle, BundleLimits, CatalogError, all_bundles,
                                   copy_template, find, is_slug, load)

__all__ = ["SLUG", "TEMPLATE_DIR", "Bundle", "BundleLimits", "CatalogError", "all_bundles", "copy_template",
           "find", "is_slug", "load"]
