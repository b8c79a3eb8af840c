"""The workbook's two languages: messages and table headings (`i18n`), the shared vocabulary
(`glossary`), a CJK font for plots (`fonts`) and the two editions of the notebooks (`editions`).
Words are chosen here, where they are shown; computations elsewhere return data."""
