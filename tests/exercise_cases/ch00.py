"""Plausible wrong answers to the exercises of notebook 00: each must fail with a hint."""

WRONG = {
    "0.1": ["file name", "size_bytes", "hash", "檔名", "雜湊", "路徑", "模型名稱"],
    "0.2": ["accepted", "接受", 200, "放得下", "被接受"],
    "0.3": [2048, 1000, "2048"],
    "0.4": ["the versions", "版本和旗標", "要記下模型的雜湊和旗標"],
}
