"""The only code mounted into the student sandbox: the warm process (``warm``) and the
wire format (``wire``) both sides speak.

Inside the sandbox this folder is the top-level package ``inside``; nothing else of
``grader`` is there to import, so a submission cannot reach the trusted side's modules.
Modules here import only each other (relatively), the standard library and torch.
"""
