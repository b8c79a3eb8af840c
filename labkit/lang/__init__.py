"""The workbook's two languages: messages and table headings (`i18n`), the shared vocabulary
(`glossary`) and a CJK font for plots (`fonts`); which language is in use (`choice`). The tool that
keeps the notebooks' two editions in step is a maintainer's (`authoring/editions.py`). Words are
chosen here, where they are shown; computations elsewhere return data."""
