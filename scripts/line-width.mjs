// `npm run lint`, second half: no line of src/ wider than the formatter's lineWidth (biome.json). The formatter wraps
// code; comments and long strings it leaves as written, so they are held to the same width here.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const width = JSON.parse(readFileSync('biome.json', 'utf8')).formatter.lineWidth;
const over = [];
const walk = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path);
    else if (path.endsWith('.ts')) {
      readFileSync(path, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (line.length > width) over.push(`${path}:${i + 1}: ${line.length} characters (at most ${width})`);
        });
    }
  }
};
walk('src');
for (const line of over) console.error(line);
console.log(over.length === 0 ? `line width: every line of src/ fits in ${width} characters` : `line width: ${over.length} line(s) of src/ too wide`);
process.exit(over.length === 0 ? 0 : 1);
