/* Overview page: the characters-per-day bar chart (Chart.js, served from static/vendor). */
(function () {
  "use strict";
  var canvas = document.getElementById("usage-chart");
  var dataNode = document.getElementById("usage-data");
  if (!canvas || !dataNode || !window.Chart) return;
  var data = JSON.parse(dataNode.textContent);
  new window.Chart(canvas, {
    type: "bar",
    data: {
      labels: data.labels.map(function (d) { return d.slice(5); }),
      datasets: [{ label: "Characters", data: data.characters, backgroundColor: "#3b6fd8" }]
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      plugins: { legend: { display: false } },
      scales: { y: { beginAtZero: true, ticks: { precision: 0 } } }
    }
  });
})();
