import { main } from './app.js';

await main();
