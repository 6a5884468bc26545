// The model zoo's family tables (docs/models.md, hooks/sweep_table.py): a search box hides the
// rows that do not contain every word typed, and the groups left empty. No library, no network.
document$.subscribe(() => {
  const box = document.querySelector("input.zoo-filter");
  if (!box) return;
  const count = document.querySelector(".zoo-count");
  const groups = Array.from(document.querySelectorAll(".zoo-group"));
  const apply = () => {
    const words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const group of groups) {
      let visible = 0;
      for (const row of group.querySelectorAll("tbody tr")) {
        const text = row.textContent.toLowerCase();
        const match = words.every((w) => text.includes(w));
        row.hidden = !match;
        if (match) visible += 1;
      }
      group.hidden = visible === 0;
      shown += visible;
    }
    if (count) count.textContent = words.length ? `${shown} shown` : "";
  };
  box.addEventListener("input", apply);
  apply();
});
