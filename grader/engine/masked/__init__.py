# Mounted over every installed copy of the grader package that the sandbox could see
# (see sandbox.installed_copies), so that a submission's `import grader` fails. The
# grader itself never imports this.
raise ImportError("the grader's own modules are not available inside the sandbox")
