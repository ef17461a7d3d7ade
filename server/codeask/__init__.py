"""codeask: ask your codebase a question from the editor and get a cited answer.

Data flows one way: workspace files -> chunks -> rows in LanceDB -> retrieved documents -> answer.
"""

__version__ = "0.1.0"
