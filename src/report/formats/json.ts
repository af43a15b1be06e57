import type { Renderer } from "./index.js";

export const renderJson: Renderer = (report) => `${JSON.stringify(report, null, 2)}\n`;
