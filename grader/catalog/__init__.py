"""The catalogue: the service's exercises, as published and uploaded.

    models.py      published exercise versions and uploaded bundles, as stored
    uploads.py     receiving an uploaded zip safely, unpacking it on a worker, publishing it
    publishing.py  publishing the catalogue folder (grader up, grader exercise sync)
    tasks.py       the check of an upload, on a worker
    drafts.py      an uploaded exercise is a draft until released; who may release it

The bundle format is ``grader.bundle`` (its names are handed on here); the checks an
author runs are ``grader.authoring``. Importing this package pulls in neither the engine
nor the database.
"""

from grader.bundle import SLUG, Bundle, BundleLimits, CatalogError, all_bundles, find, is_slug, load

__all__ = ["SLUG", "Bundle", "BundleLimits", "CatalogError", "all_bundles", "find", "is_slug", "load"]
