// The cell every framework's scripted model asks to run: a matplotlib figure (an image for the model) and a value.
export const PLOT_CELL = [
  "import matplotlib",
  "matplotlib.use('Agg')",
  "import matplotlib.pyplot as plt",
  "plt.plot([1, 2, 3], [1, 4, 9])",
  "plt.show()",
  "x = 6 * 7",
  "x",
].join("\n");
