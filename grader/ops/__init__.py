"""Operating the service: health probes and the /metrics page.

health.py asks the database, the broker and the workers how they are; views.py serves
/healthz, /readyz and /metrics. The counters themselves (``grader.metrics``) and the log
format (``grader.logs``) are leaves every part may import. None of it imports the engine
or torch.
"""
