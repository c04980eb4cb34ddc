'use strict';
// plotly.js core (which carries the scatter trace, annotations, legend, hover and the modebar)
// plus the scattergl trace: the only trace types the roofline report and diff pages draw.
var Plotly = require('plotly.js/lib/core');
Plotly.register([require('plotly.js/lib/scattergl')]);
module.exports = Plotly;
