"""Operating the service: health probes, Prometheus metrics and JSON logs.

metrics.py and logs.py are leaves every part may import (a counter is incremented where
the thing happens); health.py asks the database, the broker and the workers how they are;
views.py serves /healthz, /readyz and /metrics. None of it imports the engine or torch.
"""
