"use strict";
function cellKey(row, column) {
  const cell = row.cells[column];
  const number = parseFloat(cell.dataset.v);
  return cell.dataset.v !== undefined && !Number.isNaN(number) ? number : cell.textContent;
}
function compareKeys(a, b) {
  if (typeof a === "number" && typeof b === "number") { return a - b; }
  if (typeof a === "number") { return -1; }
  if (typeof b === "number") { return 1; }
  return String(a).localeCompare(String(b));
}
function sortBy(header) {
  const table = header.closest("table");
  const column = header.cellIndex;
  const direction = header.dataset.dir === "asc" ? "desc" : "asc";
  table.querySelectorAll("th").forEach(function (th) { delete th.dataset.dir; });
  header.dataset.dir = direction;
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort(function (x, y) {
    const order = compareKeys(cellKey(x, column), cellKey(y, column));
    return direction === "asc" ? order : -order;
  });
  rows.forEach(function (row) { body.appendChild(row); });
}
document.querySelectorAll("table.sortable th").forEach(function (th) {
  th.addEventListener("click", function () { sortBy(th); });
});
document.body.dataset.ready = "yes";
