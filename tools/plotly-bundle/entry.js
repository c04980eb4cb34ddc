'use strict';
// plotly.js core: the scatter trace (the only trace type the roofline report and diff pages draw;
// large charts draw their points on a 2D canvas, so no WebGL trace is needed), axes, legend, hover,
// annotations (the diff arrows) and the mode bar.
module.exports = require('plotly.js/lib/core');
