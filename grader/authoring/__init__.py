"""What an exercise's author runs, above the engine and below the service.

    check.py         a bundle's own files must grade as they say (reference, starter, mutants)
    check_table.py   the check's rows and their text form (no engine: pages show it)
    mutation.py      mutants made from the reference solution: which ones survive
    misconceptions.py  the misconception table every hint must come from
    near_miss.py     the reference with one function's value changed: no hint may name a mistake
    new.py  template/  `grader new`: the annotated bundle a new exercise starts from
    push.py          sending a bundle to a running service's API and following its check

Importing this package loads none of them: the pages read ``check_table`` without the engine.
"""
