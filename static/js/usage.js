/* Usage page: characters and requests per day, stacked by the chosen breakdown (Chart.js from static/vendor). */
(function () {
  "use strict";
  var node = document.getElementById("usage-charts");
  if (!node || !window.Chart) return;
  var charts = JSON.parse(node.textContent);
  function draw(id, data) {
    var canvas = document.getElementById(id);
    if (!canvas) return;
    new window.Chart(canvas, {
      type: "bar",
      data: { labels: data.labels.map(function (d) { return d.slice(5); }), datasets: data.datasets },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        plugins: { legend: { display: data.datasets.length > 1, position: "bottom" } },
        scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } }
      }
    });
  }
  draw("usage-chars-chart", charts.characters);
  draw("usage-requests-chart", charts.requests);
})();
